package delta

import (
	"strconv"
)

// deltaSummary describes a Delta commit in the words of an Iceberg
// snapshot summary, from its add and remove actions, so that a version's
// lineage entry says what it wrote as an Iceberg snapshot's does (Delta
// keeps no summary of its own):
//
//   - added-data-files, deleted-data-files: the files it added and removed
//     (a file removed and added again with a new deletion vector is
//     neither);
//   - added-records, deleted-records: the live rows of those files, from
//     each action's statistics (numRecords, less its deletion vector's
//     cardinality); left out when an action of theirs has no statistics;
//   - added-position-deletes: the rows deletion vectors newly mark
//     deleted (a file's new vector's cardinality less its old one's); a
//     smaller vector (a RESTORE) makes rows live again, which count as
//     added-records.
//
// It returns nil for a commit that touched no data file.
func deltaSummary(c *Commit) map[string]string {
	removed := make(map[string]*Remove, len(c.Removes))
	for _, r := range c.Removes {
		removed[r.Path] = r
	}
	readded := map[string]bool{}
	var addFiles, delFiles, addRecs, delRecs, posDeletes, revived int64
	addKnown, delKnown := true, true
	for _, a := range c.Adds {
		if r, ok := removed[a.Path]; ok {
			readded[a.Path] = true
			// A new vector deletes more rows, or (a RESTORE) fewer: those
			// are live again.
			d := dvCardinality(a.DeletionVector) - dvCardinality(r.DeletionVector)
			posDeletes += max(0, d)
			revived += max(0, -d)
			continue
		}
		addFiles++
		if n := recordCount(a.Stats); n >= 0 {
			addRecs += n - dvCardinality(a.DeletionVector)
		} else {
			addKnown = false
		}
	}
	for _, r := range c.Removes {
		if readded[r.Path] {
			continue
		}
		delFiles++
		if n := recordCount(r.Stats); n >= 0 {
			delRecs += n - dvCardinality(r.DeletionVector)
		} else {
			delKnown = false
		}
	}
	out := map[string]string{}
	put := func(key string, n int64, ok bool) {
		if ok {
			out[key] = strconv.FormatInt(n, 10)
		}
	}
	put("added-data-files", addFiles, addFiles > 0)
	put("added-records", addRecs+revived, (addFiles > 0 || revived > 0) && addKnown)
	put("deleted-data-files", delFiles, delFiles > 0)
	put("deleted-records", delRecs, delFiles > 0 && delKnown)
	put("added-position-deletes", posDeletes, posDeletes > 0)
	if len(out) == 0 {
		return nil
	}
	return out
}

// dvCardinality is the number of rows a deletion vector deletes (0 for
// none).
func dvCardinality(dv *DeletionVector) int64 {
	if dv == nil {
		return 0
	}
	return dv.Cardinality
}
