package sluice

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// ChangeRequest asks for the row changes of one table over the snapshot
// window (from, to]. The server validates it: see the wire protocol
// (docs/PROTOCOL.md, section 2) for the meaning of each field.
type ChangeRequest struct {
	// Table is the table, as "namespace.table". Required.
	Table string
	// FromSnapshot is the exclusive start of the window, as a snapshot id.
	// With FromTimestampMs also nil, the window starts at the start of the
	// table's history. At most one of the two may be set.
	FromSnapshot *int64
	// ToSnapshot is the inclusive end of the window, as a snapshot id.
	// With ToTimestampMs also nil, the window ends at the current snapshot
	// when the server plans it. At most one of the two may be set.
	ToSnapshot *int64
	// FromTimestampMs is the exclusive start of the window as a commit time
	// in milliseconds since the Unix epoch: the window holds the snapshots
	// committed after it.
	FromTimestampMs *int64
	// ToTimestampMs is the inclusive end of the window as a commit time in
	// milliseconds since the Unix epoch: the last snapshot committed at or
	// before it.
	ToTimestampMs *int64
	// Columns projects the before and after images onto these data
	// columns, in this order. Empty means every column.
	Columns []string
	// Filter is a SQL boolean expression over data columns, such as
	// "country = 'SE' AND amount > 10". Empty means every change.
	Filter string
	// Identity names the columns that identify a row, to pair deletes and
	// inserts into updates. Empty means the table's identifier fields.
	Identity []string
	// FoldUpdates folds each update_before/update_after pair into one
	// "update" row carrying both images.
	FoldUpdates bool
	// NetChanges collapses the window to its net changes per identity (or
	// per whole row without one).
	NetChanges bool
	// Compression is the IPC body compression of the streamed batches: ""
	// (none), "lz4" or "zstd".
	Compression string
	// Layout is the shape of the change rows: LayoutRenderable ("", the
	// default: op, before, after, snapshot, ts) or LayoutFlat (the image's
	// data columns, then _change_type, _commit_version and
	// _commit_timestamp, as Delta's change data feed returns them). Not
	// LayoutFlat with FoldUpdates.
	Layout string
	// Backend forces who computes the window of a table the server routes
	// to a Spark Connect server: "native" or "spark"; "" (the default) is
	// the table's verdict (TableInfo.Backend).
	Backend string
	// Ref is the branch or tag whose lineage the window runs on; "" (the
	// default) is the main branch. An unknown ref is codes.NotFound.
	Ref string
	// FromRef and ToRef name the window's start and end by a tag (or a
	// branch: its head when the server plans the window), instead of
	// FromSnapshot and ToSnapshot.
	FromRef, ToRef string
	// MaxEndpoints asks Client.Endpoints to split the window into at most
	// this many endpoints, to read in parallel (0 or 1: one). Changes reads
	// them one after the other.
	MaxEndpoints int
	// Lineage adds each row's id to the images as their last field,
	// "_row_id" (a nullable int64), for a table that keeps row lineage
	// (Iceberg format v3, Delta row tracking).
	Lineage bool
}

// proto converts the request to its wire form. It rejects strings that are
// not valid UTF-8, which protobuf cannot carry.
func (r ChangeRequest) proto(op string) (*sluicev1.ChangeRequest, error) {
	check := func(field, s string) error {
		if !utf8.ValidString(s) {
			return invalidArgument(op, fmt.Sprintf("%s %q is not valid UTF-8", field, s))
		}
		return nil
	}
	if err := check("table", r.Table); err != nil {
		return nil, err
	}
	if err := check("filter", r.Filter); err != nil {
		return nil, err
	}
	if err := check("compression", r.Compression); err != nil {
		return nil, err
	}
	if err := check("layout", r.Layout); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"ref", r.Ref}, {"from_ref", r.FromRef}, {"to_ref", r.ToRef}} {
		if err := check(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	for _, c := range r.Columns {
		if err := check("column", c); err != nil {
			return nil, err
		}
	}
	for _, c := range r.Identity {
		if err := check("identity column", c); err != nil {
			return nil, err
		}
	}
	return &sluicev1.ChangeRequest{
		Table:           r.Table,
		FromSnapshot:    copyInt64(r.FromSnapshot),
		FromTimestampMs: copyInt64(r.FromTimestampMs),
		ToSnapshot:      copyInt64(r.ToSnapshot),
		ToTimestampMs:   copyInt64(r.ToTimestampMs),
		Columns:         append([]string(nil), r.Columns...),
		Filter:          r.Filter,
		Identity:        append([]string(nil), r.Identity...),
		FoldUpdates:     r.FoldUpdates,
		NetChanges:      r.NetChanges,
		Compression:     r.Compression,
		Layout:          r.Layout,
		Backend:         r.Backend,
		Lineage:         r.Lineage,
		Ref:             r.Ref,
		FromRef:         r.FromRef,
		ToRef:           r.ToRef,
		MaxEndpoints:    uint32(min(max(r.MaxEndpoints, 0), math.MaxUint32)),
	}, nil
}

// descriptor returns the Flight command descriptor of the request: the
// binary protobuf ChangeRequest.
func (r ChangeRequest) descriptor(op string) (*flight.FlightDescriptor, error) {
	pr, err := r.proto(op)
	if err != nil {
		return nil, err
	}
	cmd, err := proto.MarshalOptions{Deterministic: true}.Marshal(pr)
	if err != nil {
		return nil, invalidArgument(op, fmt.Sprintf("encode request: %v", err))
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}, nil
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
