package spark

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Commit is one commit of a table as Spark reports it.
type Commit struct {
	// Version is the Delta version or the Iceberg snapshot id.
	Version int64
	// Time is the commit's time.
	Time time.Time
	// Operation is the writer's operation (WRITE, MERGE, append,
	// overwrite, ...), as Spark reports it.
	Operation string
	// Parent is the commit before it, nil for a table's first: the
	// previous Delta version, the Iceberg snapshot's parent (which may
	// have expired).
	Parent *int64
}

// History returns the table's commits in lineage order, oldest first: for
// Delta, DESCRIBE HISTORY; for Iceberg, the snapshots metadata table,
// restricted to the ancestors of the current snapshot (its history
// metadata table) and ordered by their parent links.
func (s *Session) History(ctx context.Context, t Table) ([]Commit, error) {
	name, err := t.Name.SQL()
	if err != nil {
		return nil, err
	}
	switch t.Format {
	case Delta:
		return s.deltaHistory(ctx, name)
	case Iceberg:
		return s.icebergHistory(ctx, name)
	}
	return nil, fmt.Errorf("%w: the history of a %s table", ErrInvalidRequest, t.Format)
}

func (s *Session) deltaHistory(ctx context.Context, name string) ([]Commit, error) {
	var out []Commit
	err := s.collect(ctx, "DESCRIBE HISTORY "+name,
		func(rec arrow.RecordBatch) error {
			v, ts, op, err := historyColumns(rec, "version", "timestamp", "operation")
			if err != nil {
				return err
			}
			for i := range int(rec.NumRows()) {
				c := Commit{Version: v.Value(i), Time: ts(i), Operation: op.Value(i)}
				if c.Version > 0 {
					parent := c.Version - 1
					c.Parent = &parent
				}
				out = append(out, c)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Commit) int { return compareInt(a.Version, b.Version) })
	return out, nil
}

func (s *Session) icebergHistory(ctx context.Context, name string) ([]Commit, error) {
	type snap struct {
		Commit
		parent    int64
		hasParent bool
	}
	var snaps []snap
	q := "SELECT s.`snapshot_id`, s.`committed_at`, s.`operation`, s.`parent_id` FROM " + name + ".`snapshots` s JOIN " +
		name + ".`history` h ON s.`snapshot_id` = h.`snapshot_id` WHERE h.`is_current_ancestor`"
	err := s.collect(ctx, q, func(rec arrow.RecordBatch) error {
		v, ts, op, err := historyColumns(rec, "snapshot_id", "committed_at", "operation")
		if err != nil {
			return err
		}
		parent, ok := rec.Column(3).(*array.Int64)
		if !ok {
			return fmt.Errorf("%w: the snapshots table's parent_id is %s", ErrQuery, rec.Column(3).DataType())
		}
		for i := range int(rec.NumRows()) {
			sn := snap{Commit: Commit{Version: v.Value(i), Time: ts(i), Operation: op.Value(i)},
				parent: parent.Value(i), hasParent: parent.IsValid(i)}
			if sn.hasParent {
				sn.Parent = &sn.parent
			}
			snaps = append(snaps, sn)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The ancestors form one chain: start at the one whose parent is not
	// among them and follow the links.
	child := make(map[int64]int, len(snaps))
	ids := make(map[int64]bool, len(snaps))
	for i, sn := range snaps {
		ids[sn.Version] = true
		if sn.hasParent {
			child[sn.parent] = i
		}
	}
	out := make([]Commit, 0, len(snaps))
	for _, sn := range snaps {
		if sn.hasParent && ids[sn.parent] {
			continue
		}
		for cur, ok := sn, true; ok; {
			out = append(out, cur.Commit)
			var i int
			i, ok = child[cur.Version]
			if ok {
				cur = snaps[i]
			}
		}
		break
	}
	if len(out) != len(snaps) {
		return nil, fmt.Errorf("%w: the current ancestors of %s are not one chain", ErrQuery, name)
	}
	return out, nil
}

// historyColumns finds the version, time and operation columns of a
// history batch by name.
func historyColumns(rec arrow.RecordBatch, version, time_, operation string) (*array.Int64, func(int) time.Time, *array.String, error) {
	col := func(name string) arrow.Array {
		if i := rec.Schema().FieldIndices(name); len(i) == 1 {
			return rec.Column(i[0])
		}
		return nil
	}
	v, ok1 := col(version).(*array.Int64)
	ts, ok2 := col(time_).(*array.Timestamp)
	op, ok3 := col(operation).(*array.String)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, nil, fmt.Errorf("%w: unexpected history columns %s", ErrQuery, rec.Schema())
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	return v, func(i int) time.Time { return ts.Value(i).ToTime(unit).UTC() }, op, nil
}

// collect runs query and passes each batch of its result to fn (the batch
// is released after fn returns).
func (s *Session) collect(ctx context.Context, query string, fn func(arrow.RecordBatch) error) error {
	return s.run(ctx, sqlPlan(query), query, fn)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
