package feed

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

// errStop unwinds a read whose consumer stopped taking batches.
var errStop = errors.New("feed: consumer stopped")

// spool holds assembled change batches on disk by group (a snapshot and a
// kind of change), when the changes of a snapshot or window come out of
// their partitions in an order the stream must not have: it is read back
// group by group, in the order the stream needs.
type spool struct {
	w      *runWriter
	groups map[int][]int // group → batches, in the order added
	n      int
}

func newSpool(spill *spillDir, schema *arrow.Schema) (*spool, error) {
	w, err := spill.newRun(schema)
	if err != nil {
		return nil, err
	}
	return &spool{w: w, groups: map[int][]int{}}, nil
}

// add writes a batch (which stays the caller's) to a group.
func (s *spool) add(group int, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if err := s.w.write(rec); err != nil {
		return err
	}
	s.groups[group] = append(s.groups[group], s.n)
	s.n++
	return nil
}

// each streams the spooled batches of the given groups, in order, to fn,
// which takes over each batch.
func (s *spool) each(groups []int, fn func(group int, rec arrow.RecordBatch) error) error {
	r, err := s.w.finish()
	s.w = nil
	if err != nil {
		return err
	}
	defer r.close()
	for _, g := range groups {
		for _, b := range s.groups[g] {
			rec, err := r.batch(b)
			if err != nil {
				return err
			}
			if err := fn(g, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *spool) close() {
	if s.w != nil {
		s.w.abort()
		s.w = nil
	}
}
