package paimonfx

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// State is a table state as a multiset of canonical lines: the oracle a
// feed applied to the state at a window's start must turn into the
// writer's state at its end.
type State map[string]int

// LoadState reads the writer's state at snapshot id, its rows projected
// onto the columns cols (a column added since is null; nil: as they are).
func (f Fixture) LoadState(id int64, cols []string) (State, error) {
	lines, err := ReadLines(f.StatePath(id))
	if err != nil {
		return nil, err
	}
	st := State{}
	for _, l := range lines {
		if cols != nil {
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				return nil, err
			}
			for _, c := range cols {
				if _, ok := row[c]; !ok {
					row[c] = nil
				}
			}
			if l, err = Line(row); err != nil {
				return nil, err
			}
		}
		st[l]++
	}
	return st, nil
}

// Diff describes how s differs from want (empty when equal).
func (s State) Diff(want State) string {
	var got, exp []string
	for k, n := range s {
		for range n {
			got = append(got, k)
		}
	}
	for k, n := range want {
		for range n {
			exp = append(exp, k)
		}
	}
	sort.Strings(got)
	sort.Strings(exp)
	return Diff(got, exp)
}

// ImageColumns are the columns of the images of change rows of schema s
// (the renderable layout: op, before, after, snapshot, ts).
func ImageColumns(s *arrow.Schema) []string {
	var out []string
	if st, ok := s.Field(1).Type.(*arrow.StructType); ok {
		for _, f := range st.Fields() {
			out = append(out, f.Name)
		}
	}
	return out
}

// image is the canonical line of an image (a struct column's row), ""
// for none.
func image(a arrow.Array, i int) (string, error) {
	img, ok := a.(*array.Struct)
	if !ok {
		return "", fmt.Errorf("image column of type %s", a.DataType())
	}
	if img.IsNull(i) {
		return "", nil
	}
	v, err := Value(img, i)
	if err != nil {
		return "", err
	}
	return Line(v.(map[string]any))
}

// Apply applies a batch of change rows (the renderable layout) to s: an
// insert or update_after adds its after-image, a delete or update_before
// removes its before-image, which must be in s.
func (s State) Apply(rec arrow.RecordBatch) error {
	ops, ok := rec.Column(0).(*array.String)
	if !ok {
		return fmt.Errorf("op column of type %s", rec.Column(0).DataType())
	}
	for i := range int(rec.NumRows()) {
		before, err := image(rec.Column(1), i)
		if err != nil {
			return err
		}
		after, err := image(rec.Column(2), i)
		if err != nil {
			return err
		}
		switch ops.Value(i) {
		case "insert", "update_after":
			s[after]++
		case "delete", "update_before":
			if s[before] == 0 {
				return fmt.Errorf("%s of a row not in the state: %s", ops.Value(i), before)
			}
			if s[before]--; s[before] == 0 {
				delete(s, before)
			}
		default:
			return fmt.Errorf("unexpected op %q", ops.Value(i))
		}
	}
	return nil
}
