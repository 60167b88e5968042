package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/iceberg-go/table"
)

func ipcSchema(s *arrow.Schema) ipc.Option { return ipc.WithSchema(s) }

// FullDiff computes a window's changes the way one would without Sluice:
// scan the table in full at both snapshots and diff the rows as
// multisets. It returns the number of changed rows.
func FullDiff(ctx context.Context, tbl *table.Table, from, to int64) (int64, error) {
	counts := map[string]int{}
	scan := func(snapshot int64, delta int) error {
		_, records, err := tbl.Scan(table.WithSnapshotID(snapshot), table.WithMaxConcurrency(2)).ToArrowRecords(ctx)
		if err != nil {
			return err
		}
		var key []byte
		for rec, err := range records {
			if err != nil {
				return err
			}
			for i := range int(rec.NumRows()) {
				key = key[:0]
				for _, c := range rec.Columns() {
					key = appendValue(key, c, i)
				}
				counts[string(key)] += delta
			}
			rec.Release()
		}
		return nil
	}
	if err := scan(from, -1); err != nil {
		return 0, fmt.Errorf("scan %d: %w", from, err)
	}
	if err := scan(to, +1); err != nil {
		return 0, fmt.Errorf("scan %d: %w", to, err)
	}
	var changes int64
	for _, c := range counts {
		if c < 0 {
			c = -c
		}
		changes += int64(c)
	}
	return changes, nil
}

// appendValue encodes value i of a column of the reference schema.
func appendValue(b []byte, c arrow.Array, i int) []byte {
	if c.IsNull(i) {
		return append(b, 0)
	}
	b = append(b, 1)
	switch a := c.(type) {
	case *array.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(a.Value(i)))
	case *array.Int32:
		return binary.LittleEndian.AppendUint32(b, uint32(a.Value(i)))
	case *array.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(a.Value(i)))
	case *array.Timestamp:
		return binary.LittleEndian.AppendUint64(b, uint64(a.Value(i)))
	case *array.Boolean:
		if a.Value(i) {
			return append(b, 1)
		}
		return append(b, 0)
	case *array.String:
		b = binary.AppendUvarint(b, uint64(len(a.Value(i))))
		return append(b, a.Value(i)...)
	default:
		return append(b, c.ValueStr(i)...)
	}
}
