package server

import (
	"context"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// controlService implements the typed ControlService: the same calls as
// the Flight actions.
type controlService struct {
	sluicev1.UnimplementedControlServiceServer
	s *Server
}

func (c *controlService) CommitSeq(ctx context.Context, req *sluicev1.CommitSeqRequest) (*sluicev1.CommitSeqResponse, error) {
	st, err := c.s.commitSeq(ctx, req.GetTable())
	if err != nil {
		return nil, c.s.fail(ctx, "CommitSeq", err)
	}
	return &sluicev1.CommitSeqResponse{Table: st.Table, CommitSeq: st.CommitSeq, Snapshot: st.Snapshot,
		TimestampMs: st.TimestampMs}, nil
}

func (c *controlService) ListTables(ctx context.Context, _ *sluicev1.ListTablesRequest) (*sluicev1.ListTablesResponse, error) {
	tables, err := c.s.listTables(ctx)
	if err != nil {
		return nil, c.s.fail(ctx, "ListTables", err)
	}
	out := &sluicev1.ListTablesResponse{}
	for _, t := range tables {
		out.Tables = append(out.Tables, &sluicev1.TableInfo{Name: t.Name, Format: t.Format,
			FormatVersion: int32(t.FormatVersion), CurrentSnapshot: t.CurrentSnapshot, CommitSeq: t.CommitSeq})
	}
	return out, nil
}

func (c *controlService) ListSnapshots(ctx context.Context, req *sluicev1.ListSnapshotsRequest) (*sluicev1.ListSnapshotsResponse, error) {
	snaps, err := c.s.listSnapshots(ctx, req.GetTable())
	if err != nil {
		return nil, c.s.fail(ctx, "ListSnapshots", err)
	}
	out := &sluicev1.ListSnapshotsResponse{Table: req.GetTable()}
	for _, s := range snaps {
		out.Snapshots = append(out.Snapshots, snapshotProto(s))
	}
	return out, nil
}

func (c *controlService) Explain(ctx context.Context, req *sluicev1.ChangeRequest) (*sluicev1.Plan, error) {
	fr, err := feedRequest(req)
	if err != nil {
		return nil, c.s.fail(ctx, "Explain", err)
	}
	p, err := c.s.engine.Plan(ctx, fr)
	if err != nil {
		return nil, c.s.fail(ctx, "Explain", err)
	}
	return planProto(p), nil
}

func (c *controlService) Ack(ctx context.Context, req *sluicev1.AckRequest) (*sluicev1.ConsumerProgress, error) {
	snap := req.GetSnapshot()
	info, err := c.s.ack(ctx, req.GetConsumer(), req.GetTable(), &snap)
	if err != nil {
		return nil, c.s.fail(ctx, "Ack", err)
	}
	return info.proto(), nil
}

func (c *controlService) GetConsumerProgress(ctx context.Context, req *sluicev1.ConsumerProgressRequest) (*sluicev1.ConsumerProgress, error) {
	info, err := c.s.consumerProgress(ctx, req.GetConsumer(), req.GetTable())
	if err != nil {
		return nil, c.s.fail(ctx, "GetConsumerProgress", err)
	}
	return info.proto(), nil
}

func (c *controlService) ListConsumers(ctx context.Context, req *sluicev1.ListConsumersRequest) (*sluicev1.ListConsumersResponse, error) {
	list, err := c.s.listConsumers(ctx, req.GetTable())
	if err != nil {
		return nil, c.s.fail(ctx, "ListConsumers", err)
	}
	out := &sluicev1.ListConsumersResponse{Table: req.GetTable()}
	for _, ci := range list {
		out.Consumers = append(out.Consumers, ci.proto())
	}
	return out, nil
}

func (c *controlService) ResetConsumer(ctx context.Context, req *sluicev1.ResetConsumerRequest) (*sluicev1.ResetConsumerResponse, error) {
	removed, err := c.s.resetConsumer(ctx, req.GetConsumer(), req.GetTable())
	if err != nil {
		return nil, c.s.fail(ctx, "ResetConsumer", err)
	}
	return &sluicev1.ResetConsumerResponse{Consumer: req.GetConsumer(), Table: req.GetTable(), Removed: removed}, nil
}

func (c *controlService) WatchCommits(req *sluicev1.WatchCommitsRequest, stream sluicev1.ControlService_WatchCommitsServer) error {
	ctx := stream.Context()
	err := c.s.watchCommits(ctx, req.GetTable(), func(st feed.TableStatus) error {
		return stream.Send(&sluicev1.CommitSeqResponse{Table: st.Table, CommitSeq: st.CommitSeq, Snapshot: st.Snapshot,
			TimestampMs: st.TimestampMs})
	})
	return c.s.fail(ctx, "WatchCommits", err)
}

func snapshotProto(s feed.Snapshot) *sluicev1.SnapshotInfo {
	return &sluicev1.SnapshotInfo{Snapshot: s.ID, Parent: s.ParentID, SequenceNumber: s.SequenceNumber,
		CommitSeq: s.CommitSeq, TimestampMs: s.TimestampMs, Operation: s.Operation, Summary: s.Summary,
		SchemaId: int32(s.SchemaID)}
}

func planProto(p *feed.Plan) *sluicev1.Plan {
	out := &sluicev1.Plan{Table: p.Table, FromSnapshot: p.From, ToSnapshot: p.To, Columns: p.Columns,
		Identity: p.Identity, Filter: p.Filter, FilesRead: p.FilesRead, FilesSkipped: p.FilesSkipped, BytesRead: p.BytesRead,
		RecordsRead: p.RecordsRead}
	for _, sp := range p.Snapshots {
		ps := &sluicev1.SnapshotPlan{Snapshot: sp.ID, SequenceNumber: sp.SequenceNumber, CommitSeq: sp.CommitSeq,
			TimestampMs: sp.TimestampMs, Operation: sp.Operation, Strategy: sp.Strategy,
			FilesSkipped: sp.FilesSkipped, BytesRead: sp.BytesRead, RecordsRead: sp.RecordsRead}
		for _, f := range sp.Files {
			ps.Files = append(ps.Files, &sluicev1.FilePlan{Path: f.Path, Content: f.Content, Role: f.Role,
				RecordCount: f.RecordCount, FileSizeBytes: f.FileSizeBytes})
		}
		out.Snapshots = append(out.Snapshots, ps)
	}
	return out
}
