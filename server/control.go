package server

import (
	"context"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// controlService implements the typed ControlService: adapters from its
// protobuf messages to the typed handlers the Flight actions share.
type controlService struct {
	sluicev1.UnimplementedControlServiceServer
	s *Server
}

func (c *controlService) CommitSeq(ctx context.Context, req *sluicev1.CommitSeqRequest) (*sluicev1.CommitSeqResponse, error) {
	st, err := c.s.commitSeq(ctx, refBody{Table: req.GetTable(), Ref: req.GetRef()})
	if err != nil {
		return nil, c.s.fail(ctx, "CommitSeq", err)
	}
	return statusProto(st), nil
}

func (c *controlService) ListTables(ctx context.Context, _ *sluicev1.ListTablesRequest) (*sluicev1.ListTablesResponse, error) {
	list, err := c.s.listTables(ctx, emptyBody{})
	if err != nil {
		return nil, c.s.fail(ctx, "ListTables", err)
	}
	return list.proto(), nil
}

func (c *controlService) ListSnapshots(ctx context.Context, req *sluicev1.ListSnapshotsRequest) (*sluicev1.ListSnapshotsResponse, error) {
	list, err := c.s.listSnapshots(ctx, refBody{Table: req.GetTable(), Ref: req.GetRef()})
	if err != nil {
		return nil, c.s.fail(ctx, "ListSnapshots", err)
	}
	return list.proto(), nil
}

func (c *controlService) Explain(ctx context.Context, req *sluicev1.ChangeRequest) (*sluicev1.Plan, error) {
	r, err := newRequest(req)
	if err != nil {
		return nil, c.s.fail(ctx, "Explain", err)
	}
	p, err := c.s.explain(ctx, r)
	if err != nil {
		return nil, c.s.fail(ctx, "Explain", err)
	}
	return planProto(p), nil
}

func (c *controlService) Ack(ctx context.Context, req *sluicev1.AckRequest) (*sluicev1.ConsumerProgress, error) {
	snap := jsonInt64(req.GetSnapshot())
	info, err := c.s.ack(ctx, ackBody{Consumer: req.GetConsumer(), Table: req.GetTable(), Snapshot: &snap,
		Protect: req.GetProtect(), Ref: req.GetRef()})
	if err != nil {
		return nil, c.s.fail(ctx, "Ack", err)
	}
	return info.proto(), nil
}

func (c *controlService) GetConsumerProgress(ctx context.Context, req *sluicev1.ConsumerProgressRequest) (*sluicev1.ConsumerProgress, error) {
	info, err := c.s.consumerProgress(ctx, consumerBody{Consumer: req.GetConsumer(), Table: req.GetTable(),
		Ref: req.GetRef()})
	if err != nil {
		return nil, c.s.fail(ctx, "GetConsumerProgress", err)
	}
	return info.proto(), nil
}

func (c *controlService) ListConsumers(ctx context.Context, req *sluicev1.ListConsumersRequest) (*sluicev1.ListConsumersResponse, error) {
	list, err := c.s.listConsumers(ctx, tableBody{Table: req.GetTable()})
	if err != nil {
		return nil, c.s.fail(ctx, "ListConsumers", err)
	}
	return list.proto(), nil
}

func (c *controlService) ResetConsumer(ctx context.Context, req *sluicev1.ResetConsumerRequest) (*sluicev1.ResetConsumerResponse, error) {
	res, err := c.s.resetConsumer(ctx, consumerBody{Consumer: req.GetConsumer(), Table: req.GetTable(),
		Ref: req.GetRef()})
	if err != nil {
		return nil, c.s.fail(ctx, "ResetConsumer", err)
	}
	return res.proto(), nil
}

func (c *controlService) WatchCommits(req *sluicev1.WatchCommitsRequest, stream sluicev1.ControlService_WatchCommitsServer) error {
	ctx := stream.Context()
	err := c.s.watchCommits(ctx, refBody{Table: req.GetTable(), Ref: req.GetRef()}, func(st feed.TableStatus) error {
		return stream.Send(statusProto(st))
	})
	return c.s.fail(ctx, "WatchCommits", err)
}
