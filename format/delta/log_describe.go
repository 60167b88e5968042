package delta

import (
	"context"
	"errors"
	"fmt"
	json "github.com/goccy/go-json"
)

// description is what a lineage entry says of a version: its commit time,
// operation and summary.
type description struct {
	timestampMs int64
	operation   string
	summary     map[string]string
}

// describe returns the description of version's commit: its time (see
// Commit.TimestampMs), operation (commitInfo's) and summary (see
// deltaSummary). A commit in the cache is described from there. With keep
// the commit is read as Commit reads it, and cached. Without, its file is
// read and parsed only for the fields a description needs, and not kept
// (a table's first load describes every version, which would only push
// the commits a window needs out of the cache); a file that does not parse
// that way, or is not there, is read as Commit reads it, for its errors
// (and the grace of an incomplete newest commit).
func (t *Table) describe(ctx context.Context, version int64, keep bool) (description, error) {
	if c, ok := t.commits.Peek(version); ok {
		return describeCommit(c), nil
	}
	if !keep {
		data, mod, err := t.readCommitFile(ctx, version)
		if err == nil {
			if c, err := parseCommitSummary(version, data); err == nil {
				c.ModTime = mod
				return describeCommit(c), nil
			}
		}
		if err := ctx.Err(); err != nil {
			return description{}, err
		}
	}
	c, err := t.Commit(ctx, version)
	if err != nil {
		return description{}, err
	}
	return describeCommit(c), nil
}

// describeCommit returns the description of c.
func describeCommit(c *Commit) description {
	d := description{timestampMs: c.TimestampMs(), summary: deltaSummary(c)}
	if c.CommitInfo != nil {
		d.operation = c.CommitInfo.Operation
	}
	return d
}

// summaryAction is what a description reads of an action: the commit
// time and operation of commitInfo, and the path, statistics and deletion
// vector cardinality of add and remove (see deltaSummary).
type summaryAction struct {
	CommitInfo *struct {
		Timestamp         *int64 `json:"timestamp"`
		InCommitTimestamp *int64 `json:"inCommitTimestamp"`
		Operation         string `json:"operation"`
	} `json:"commitInfo"`
	Add    *summaryFile `json:"add"`
	Remove *summaryFile `json:"remove"`
}

// summaryFile is what a description reads of an add or a remove.
type summaryFile struct {
	Path           string `json:"path"`
	Stats          string `json:"stats"`
	DeletionVector *struct {
		Cardinality int64 `json:"cardinality"`
	} `json:"deletionVector"`
}

func (f *summaryFile) dv() *DeletionVector {
	if f.DeletionVector == nil {
		return nil
	}
	return &DeletionVector{Cardinality: f.DeletionVector.Cardinality}
}

// errNoPath is a file action without a path.
var errNoPath = errors.New("file action without a path")

// parseCommitSummary parses version's commit file for its description: a
// Commit with its commitInfo's times and operation, and its adds and
// removes with their paths, statistics and deletion vector cardinalities
// (nothing else). It fails where parseCommit fails on the lines it reads
// (not on the fields of actions it skips).
func parseCommitSummary(version int64, data []byte) (*Commit, error) {
	c := &Commit{Version: version}
	err := eachLine(data, func(line int, l []byte) error {
		var a summaryAction
		if err := json.Unmarshal(l, &a); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if ci := a.CommitInfo; ci != nil {
			c.CommitInfo = &CommitInfo{Timestamp: ci.Timestamp, InCommitTimestamp: ci.InCommitTimestamp,
				Operation: ci.Operation}
		}
		if f := a.Add; f != nil {
			if f.Path == "" {
				return fmt.Errorf("line %d: %w", line, errNoPath)
			}
			c.Adds = append(c.Adds, &Add{Path: f.Path, Stats: f.Stats, DeletionVector: f.dv()})
		}
		if f := a.Remove; f != nil {
			if f.Path == "" {
				return fmt.Errorf("line %d: %w", line, errNoPath)
			}
			c.Removes = append(c.Removes, &Remove{Path: f.Path, Stats: f.Stats, DeletionVector: f.dv()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
