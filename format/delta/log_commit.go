package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Commit is the content of one commit file: the actions of one version.
type Commit struct {
	Version        int64
	Adds           []*Add
	Removes        []*Remove
	CDCs           []*CDC
	Metadata       *Metadata
	Protocol       *Protocol
	CommitInfo     *CommitInfo
	DomainMetadata []*DomainMetadata
	// ModTime is the commit file's modification time.
	ModTime time.Time
}

// TimestampMs returns the commit's time in milliseconds since the epoch:
// commitInfo's inCommitTimestamp when present, else commitInfo's
// timestamp, else the commit file's modification time.
func (c *Commit) TimestampMs() int64 {
	if ci := c.CommitInfo; ci != nil {
		if ci.InCommitTimestamp != nil {
			return *ci.InCommitTimestamp
		}
		if ci.Timestamp != nil {
			return *ci.Timestamp
		}
	}
	return c.ModTime.UnixMilli()
}

// Commit returns the actions of version's commit file. It fails with
// ErrVersionNotFound for a version beyond the latest one, with
// ErrLogCleaned for a version older than the oldest commit file retained,
// and with ErrCorrupt for a missing commit between retained ones or a
// malformed file.
func (t *Table) Commit(ctx context.Context, version int64) (*Commit, error) {
	if version < 0 {
		return nil, fmt.Errorf("%w: table %q, version %d", ErrVersionNotFound, t.name, version)
	}
	c, err := t.commit(ctx, version)
	if !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	l, lerr := t.list(ctx)
	if lerr != nil {
		return nil, lerr
	}
	latest, oldest := l.latest(), l.oldestCommit()
	switch {
	case version > latest:
		return nil, fmt.Errorf("%w: table %q, version %d: the latest version is %d",
			ErrVersionNotFound, t.name, version, latest)
	case oldest < 0 || version < oldest:
		return nil, fmt.Errorf("%w: table %q, version %d: commit %s was removed by log cleanup; the oldest commit retained is %d; %s",
			ErrLogCleaned, t.name, version, commitFile(version), oldest, l.readable())
	case l.hasCommits(version, version):
		return t.commit(ctx, version) // written since the first attempt
	}
	return nil, fmt.Errorf("%w: table %q, version %d: commit %s is missing (the log holds commits %d to %d)",
		ErrCorrupt, t.name, version, commitFile(version), oldest, latest)
}

// commit returns version's commit, from the cache or its file. An error
// wrapping fs.ErrNotExist means there is no such file. The newest commit
// file, when malformed, is read again within the table's grace (see
// WithCommitGrace).
func (t *Table) commit(ctx context.Context, version int64) (*Commit, error) {
	if c, ok := t.commits.Get(version); ok {
		return c, nil
	}
	wait := commitRetryFirst
	for {
		c, err := t.readCommit(ctx, version)
		var inc *incompleteError
		if !errors.As(err, &inc) {
			if err == nil {
				t.settle(version)
				t.commits.Add(version, c)
			}
			return c, err
		}
		left, newest, lerr := t.graceLeft(ctx, version)
		switch {
		case lerr != nil:
			return nil, lerr
		case !newest:
			return nil, inc.corrupt("")
		case left <= 0:
			return nil, inc.corrupt(fmt.Sprintf(" (the newest commit file, still incomplete %s after it was "+
				"first read: a writer must publish a commit file whole, or finish it within that time)", t.grace))
		}
		timer := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, commitRetryMax)
	}
}

// The waits between reads of an incomplete newest commit file: doubling
// from the first to the longest.
const (
	commitRetryFirst = 25 * time.Millisecond
	commitRetryMax   = time.Second
)

// incompleteError is a commit file that does not parse: a corrupt commit,
// or the newest one while its writer is still writing it.
type incompleteError struct {
	table   string
	version int64
	file    string
	err     error
}

func (e *incompleteError) Error() string { return e.corrupt("").Error() }

// corrupt returns the file's error as ErrCorrupt, with more said after it.
func (e *incompleteError) corrupt(more string) error {
	return fmt.Errorf("%w: table %q, version %d: %s %w%s", ErrCorrupt, e.table, e.version, e.file, e.err, more)
}

// readCommit reads and parses version's commit file once. A file that does
// not parse is an *incompleteError.
func (t *Table) readCommit(ctx context.Context, version int64) (*Commit, error) {
	data, mod, err := t.readCommitFile(ctx, version)
	if err != nil {
		return nil, err
	}
	c, err := parseCommit(version, data)
	if err != nil {
		return nil, &incompleteError{table: t.name, version: version, file: commitFile(version), err: err}
	}
	c.ModTime = mod
	return c, nil
}

// readCommitFile reads version's commit file: its content and its
// modification time. An error wrapping fs.ErrNotExist means there is no
// such file.
func (t *Table) readCommitFile(ctx context.Context, version int64) ([]byte, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	name := commitFile(version)
	f, err := t.fsys.Open(name)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("table %q, version %d: %w", t.name, version, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, name, err)
	}
	// Sized by the file (as os.ReadFile does), and read to its end, should
	// it have grown since.
	buf := bytes.NewBuffer(make([]byte, 0, max(info.Size(), 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, name, err)
	}
	return buf.Bytes(), info.ModTime(), nil
}

// graceLeft reports whether version is the newest of the log (a listing
// of it), and how much of its grace is left: counted from the first time
// it was found incomplete.
func (t *Table) graceLeft(ctx context.Context, version int64) (time.Duration, bool, error) {
	l, err := t.current(ctx)
	if err != nil {
		return 0, false, err
	}
	if version < l.latest() {
		return 0, false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	first, ok := t.incomplete[version]
	if !ok {
		first = time.Now()
		t.incomplete[version] = first
	}
	return t.grace - time.Since(first), true, nil
}

// settle forgets that version was found incomplete: it parsed.
func (t *Table) settle(version int64) {
	t.mu.Lock()
	delete(t.incomplete, version)
	t.mu.Unlock()
}

// parseCommit parses the content of version's commit file: one JSON action
// per line. Blank lines and unknown actions are ignored; a line that is not
// a JSON object, or a file action without a path, is an error naming the
// line.
func parseCommit(version int64, data []byte) (*Commit, error) {
	c := &Commit{Version: version}
	err := parseActions(data, func(line int, a *Action) error {
		switch {
		case a.Add != nil && a.Add.Path == "",
			a.Remove != nil && a.Remove.Path == "",
			a.CDC != nil && a.CDC.Path == "":
			return fmt.Errorf("line %d: file action without a path", line)
		}
		if a.Add != nil {
			c.Adds = append(c.Adds, a.Add)
		}
		if a.Remove != nil {
			c.Removes = append(c.Removes, a.Remove)
		}
		if a.CDC != nil {
			c.CDCs = append(c.CDCs, a.CDC)
		}
		if a.MetaData != nil {
			c.Metadata = a.MetaData
		}
		if a.Protocol != nil {
			c.Protocol = a.Protocol
		}
		if a.CommitInfo != nil {
			c.CommitInfo = a.CommitInfo
		}
		if a.DomainMetadata != nil {
			c.DomainMetadata = append(c.DomainMetadata, a.DomainMetadata)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// parseActions calls fn with each action of newline-delimited JSON (a
// commit file or a JSON V2 checkpoint) and its 1-based line number. Blank
// lines are skipped; a line that is not a JSON object is an error naming
// the line.
func parseActions(data []byte, fn func(line int, a *Action) error) error {
	return eachLine(data, func(line int, l []byte) error {
		var a Action
		if err := json.Unmarshal(l, &a); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(line, &a)
	})
}

// eachLine calls fn with each line of newline-delimited JSON that holds an
// object, trimmed, and its 1-based line number. Blank lines are skipped; a
// line that is not a JSON object is an error naming the line.
func eachLine(data []byte, fn func(line int, l []byte) error) error {
	for line := 1; len(data) > 0; line++ {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if l[0] != '{' {
			return fmt.Errorf("line %d: not a JSON object", line)
		}
		if err := fn(line, l); err != nil {
			return err
		}
	}
	return nil
}
