package feed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// ReadKey names what a read of the plan yields, for a cache of read
// windows shared among readers: two plans with the same key yield the same
// batches. It covers the table, its format and the window, each snapshot
// (id, commit sequence, commit time, strategy and the files read, which
// tell a table deleted and created again), the projection, identity,
// filter, fold and net-changes options, the layout and the output
// schema. It is "" for a plan of a window's Part (a part's batches differ
// from the window's read), which is not to be shared.
func (p *Plan) ReadKey() string {
	if p.part {
		return ""
	}
	h := sha256.New()
	keyFields(h, "window", p.Table, p.Format, p.From, p.To, p.Columns, p.Identity, p.Filter, p.NetChanges,
		p.foldUpdates, p.Layout, p.Schema().String())
	for _, sp := range p.Snapshots {
		keyFields(h, sp.ID, sp.CommitSeq, sp.TimestampMs, sp.Strategy, len(sp.Files))
		for _, f := range sp.Files {
			keyFields(h, f.Path, f.Role, f.FileSizeBytes, f.RecordCount)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadKey names what a read of the full state yields, as Plan.ReadKey does
// for a window: the table, the snapshot, the live files read, the
// projection, identity, filter, layout and output schema.
func (sp *StatePlan) ReadKey() string {
	h := sha256.New()
	s := sp.Snapshot
	keyFields(h, "state", sp.Table, sp.p.Format, s.ID, s.CommitSeq, s.TimestampMs, sp.Columns, sp.Identity,
		sp.Filter, sp.p.Layout, sp.Schema().String(), sp.FilesRead, sp.BytesRead, sp.RecordsRead)
	return hex.EncodeToString(h.Sum(nil))
}

// keyFields writes each value to h, each prefixed with its length so that
// no two lists of values write the same bytes.
func keyFields(h hash.Hash, values ...any) {
	for _, v := range values {
		var s string
		switch v := v.(type) {
		case *int64:
			s = "nil"
			if v != nil {
				s = strconv.FormatInt(*v, 10)
			}
		case []string:
			keyFields(h, len(v))
			for _, x := range v {
				keyFields(h, x)
			}
			continue
		default:
			s = fmt.Sprint(v)
		}
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
}
