package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// The typed handlers of the control calls: one per call, each taking its
// typed request and returning its typed result. The Flight actions
// (actions.go, JSON bodies and results) and the ControlService (control.go,
// protobuf) are thin adapters over them. Each authorizes once, before it
// reads anything, and its errors repeat the client's names cut short.

// tableBody is the request of the calls that name a table.
type tableBody struct {
	Table string `json:"table"`
}

func (b tableBody) names() []string { return []string{b.Table} }

// emptyBody is the request of list_tables.
type emptyBody struct{}

func (emptyBody) names() []string { return nil }

// refBody is the request of the calls that name a table and, optionally,
// one of its branches or tags (commit_seq, list_snapshots, watch_commits).
type refBody struct {
	Table string `json:"table"`
	// Ref is the branch or tag; empty: the main branch.
	Ref string `json:"ref,omitempty"`
}

func (b refBody) names() []string { return []string{b.Table, b.Ref} }

// commitSeq returns the table's current commit position: its main
// branch's head, or its ref's.
func (s *Server) commitSeq(ctx context.Context, b refBody) (feed.TableStatus, error) {
	if err := s.checkTable(ctx, b.Table); err != nil {
		return feed.TableStatus{}, err
	}
	st, err := s.engine.StatusOn(ctx, b.Table, b.Ref)
	return st, clipNames(err, b.names()...)
}

// tableList is the result of list_tables.
type tableList struct {
	Tables []feed.TableInfo `json:"tables"`
}

func (l tableList) proto() *sluicev1.ListTablesResponse {
	out := &sluicev1.ListTablesResponse{}
	for _, t := range l.Tables {
		out.Tables = append(out.Tables, &sluicev1.TableInfo{Name: t.Name, Format: t.Format,
			FormatVersion: int32(t.FormatVersion), CurrentSnapshot: t.CurrentSnapshot, CommitSeq: t.CommitSeq,
			Backend: verdictProto(t.Backend)})
	}
	return out
}

// listTables lists the tables the caller may read.
func (s *Server) listTables(ctx context.Context, _ emptyBody) (tableList, error) {
	tables, err := s.tables(ctx)
	return tableList{Tables: tables}, err
}

// tables describes the tables the caller may read. A table that cannot be
// loaded is left out, and logged: one broken table does not make the
// listing fail for everyone who may read it.
func (s *Server) tables(ctx context.Context) ([]feed.TableInfo, error) {
	tables, skipped, err := s.engine.ListTables(ctx, s.readable(ctx))
	for _, sk := range skipped {
		s.skipped(ctx, sk.Table, sk.Err)
	}
	return tables, err
}

// skipped logs a table left out of a listing.
func (s *Server) skipped(ctx context.Context, table string, err error) {
	s.log.WarnContext(ctx, "table left out of a listing", "table", clipName(table), "principal",
		principalOf(ctx).Name, "code", codeOf(err).String(), "error", clipNames(err, table).Error())
}

// snapshotList is the result of list_snapshots.
type snapshotList struct {
	Table     string          `json:"table"`
	Snapshots []feed.Snapshot `json:"snapshots"`
	// Ref is the branch or tag whose lineage this is (nil: the main
	// branch of a request that named none).
	Ref *feed.Ref `json:"ref,omitempty"`
}

func (l snapshotList) proto() *sluicev1.ListSnapshotsResponse {
	out := &sluicev1.ListSnapshotsResponse{Table: l.Table, Ref: refProto(l.Ref)}
	for _, s := range l.Snapshots {
		out.Snapshots = append(out.Snapshots, &sluicev1.SnapshotInfo{Snapshot: s.ID, Parent: s.ParentID,
			SequenceNumber: s.SequenceNumber, CommitSeq: s.CommitSeq, TimestampMs: s.TimestampMs,
			Operation: s.Operation, Summary: s.Summary, SchemaId: int32(s.SchemaID)})
	}
	return out
}

// listSnapshots returns the lineage of the table's main branch, or of its
// ref.
func (s *Server) listSnapshots(ctx context.Context, b refBody) (snapshotList, error) {
	if err := s.checkTable(ctx, b.Table); err != nil {
		return snapshotList{}, err
	}
	hist, ref, err := s.engine.HistoryOn(ctx, b.Table, b.Ref)
	return snapshotList{Table: b.Table, Snapshots: hist.Snapshots, Ref: ref}, clipNames(err, b.names()...)
}

// refProto is a ref on the wire (nil: none).
func refProto(r *feed.Ref) *sluicev1.Ref {
	if r == nil {
		return nil
	}
	return &sluicev1.Ref{Name: r.Name, Kind: r.Kind, Snapshot: r.Head}
}

// explain plans a window without reading data.
func (s *Server) explain(ctx context.Context, r *request) (*feed.Plan, error) {
	if r.stream != nil {
		return nil, errStreamNotWindow
	}
	if err := s.authorize(ctx, r); err != nil {
		return nil, clipNames(err, r.names()...)
	}
	p, err := s.plan(ctx, r)
	return p, clipNames(err, r.names()...)
}

func planProto(p *feed.Plan) *sluicev1.Plan {
	out := &sluicev1.Plan{Table: p.Table, FromSnapshot: p.From, ToSnapshot: p.To, Columns: p.Columns,
		Identity: p.Identity, Filter: p.Filter, FilesRead: p.FilesRead, FilesSkipped: p.FilesSkipped, BytesRead: p.BytesRead,
		RecordsRead: p.RecordsRead, Format: p.Format, Backend: verdictProto(p.Backend), Pairing: p.Pairing,
		Ref: refProto(p.Ref)}
	for _, sp := range p.Snapshots {
		ps := &sluicev1.SnapshotPlan{Snapshot: sp.ID, SequenceNumber: sp.SequenceNumber, CommitSeq: sp.CommitSeq,
			TimestampMs: sp.TimestampMs, Operation: sp.Operation, Strategy: sp.Strategy, Reason: sp.Reason,
			FilesSkipped: sp.FilesSkipped, BytesRead: sp.BytesRead, RecordsRead: sp.RecordsRead,
			Pairing: sp.Pairing, LineageReason: sp.LineageReason}
		for _, f := range sp.Files {
			ps.Files = append(ps.Files, &sluicev1.FilePlan{Path: f.Path, Content: f.Content, Role: f.Role,
				RecordCount: f.RecordCount, FileSizeBytes: f.FileSizeBytes})
		}
		out.Snapshots = append(out.Snapshots, ps)
	}
	return out
}

// verdictProto is a table's backend verdict on the wire (nil: none).
func verdictProto(v *feed.Verdict) *sluicev1.BackendVerdict {
	if v == nil {
		return nil
	}
	return &sluicev1.BackendVerdict{Backend: v.Backend, Remote: v.Remote, Chosen: v.Chosen,
		ServerVersion: v.ServerVersion, NativeExpected: v.NativeExpected, NativeUsable: v.NativeUsable,
		FellBack: v.FellBack, Reason: v.Reason}
}

func statusProto(st feed.TableStatus) *sluicev1.CommitSeqResponse {
	return &sluicev1.CommitSeqResponse{Table: st.Table, CommitSeq: st.CommitSeq, Snapshot: st.Snapshot,
		TimestampMs: st.TimestampMs, Ref: refProto(st.Ref)}
}

// watchCommits sends the table's commit position (its main branch's, or
// its ref's head), then one position per
// new commit, in commit order, as the poll sees them land. It ends only
// with an error: the caller's cancellation, a failure other than an
// unavailable catalog (which it retries with backoff), or ErrShuttingDown.
func (s *Server) watchCommits(ctx context.Context, b refBody, send func(feed.TableStatus) error) error {
	if err := s.checkTable(ctx, b.Table); err != nil {
		return err
	}
	err := s.untilShutdown(ctx, func(ctx context.Context) error {
		retrying := func(err error, wait time.Duration) {
			s.log.WarnContext(ctx, "watch commits: catalog unavailable, retrying", "table", clipName(b.Table),
				"in", wait, "error", clipNames(err, b.Table).Error())
		}
		for st, err := range s.engine.WatchCommitsOn(ctx, b.Table, b.Ref, s.follow, transient, retrying) {
			if err != nil {
				return err
			}
			if err := send(st); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrShuttingDown) {
		return fmt.Errorf("%w: watching table %s ends; reconnect to resume", ErrShuttingDown, b.Table)
	}
	return clipNames(err, b.names()...)
}

// checkTable checks that a call names a table the caller may read.
func (s *Server) checkTable(ctx context.Context, table string) error {
	if strings.TrimSpace(table) == "" {
		return fmt.Errorf("%w: table is required", feed.ErrInvalidRequest)
	}
	return clipNames(s.authorizeTable(ctx, table), table)
}
