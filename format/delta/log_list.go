package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// logDir is the folder, under a table's root, that holds its log.
const logDir = "_delta_log"

// sidecarDir is the folder, under logDir, that holds V2 checkpoint sidecars.
const sidecarDir = logDir + "/_sidecars"

// checkpointKind is the naming scheme of a checkpoint ("Checkpoint Naming
// Scheme" in PROTOCOL.md). Its order is the order of preference among
// complete checkpoints of one version, as in delta-kernel-rs and Delta
// Spark: UUID-named over multi-part over classic.
type checkpointKind int

const (
	// checkpointClassic is n.checkpoint.parquet (a V1 or a V2 checkpoint).
	checkpointClassic checkpointKind = iota
	// checkpointMultiPart is n.checkpoint.o.p.parquet, part o of p (V1).
	checkpointMultiPart
	// checkpointUUID is n.checkpoint.<uuid>.json or .parquet (V2).
	checkpointUUID
)

// checkpoint is a complete checkpoint found in the log.
type checkpoint struct {
	version int64
	kind    checkpointKind
	// files are the checkpoint's files under the table root, in part order.
	files []string
}

// listing is what a listing of _delta_log found: the commit files and, per
// version, the complete checkpoint to use. Log compaction files, .crc files,
// _last_checkpoint and sub-folders (_sidecars, _staged_commits, _commits)
// are not part of it.
type listing struct {
	// commits are the versions of the commit files, ascending.
	commits []int64
	// checkpoints are the complete checkpoints, one per version, ascending.
	checkpoints []*checkpoint
	// origin is the oldest .json or .parquet file of the log: its name,
	// size and modification time (see Versions.Origin); originName,
	// originSize and originMod are the same, apart.
	origin     string
	originName string
	originSize int64
	originMod  time.Time
}

// setOrigin makes the log file name, described by info, l's origin.
func (l *listing) setOrigin(name string, info fs.FileInfo) {
	l.origin = fmt.Sprintf("%s/%d/%d", name, info.Size(), info.ModTime().UnixNano())
	l.originName, l.originSize, l.originMod = name, info.Size(), info.ModTime()
}

// commitFile returns the path of version v's commit file under the table
// root.
func commitFile(v int64) string {
	return fmt.Sprintf("%s/%020d.json", logDir, v)
}

// logName is a file name in _delta_log, parsed.
type logName struct {
	version     int64
	commit      bool
	checkpoint  bool
	kind        checkpointKind
	part, parts int
}

// parseLogName parses a file name of _delta_log. It reports false for the
// names the log replay ignores: .crc files, log compaction files
// (n.m.compacted.json, never used: PROTOCOL.md lets readers skip them and
// they are only an optimization), _last_checkpoint and unknown names.
func parseLogName(name string) (logName, bool) {
	if len(name) < 21 || name[20] != '.' || !allDigits(name[:20]) {
		return logName{}, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return logName{}, false
	}
	n := logName{version: v}
	rest := name[21:]
	switch {
	case rest == "json":
		n.commit = true
		return n, true
	case rest == "checkpoint.parquet":
		n.checkpoint, n.kind = true, checkpointClassic
		return n, true
	case !strings.HasPrefix(rest, "checkpoint."):
		return logName{}, false
	}
	f := strings.Split(strings.TrimPrefix(rest, "checkpoint."), ".")
	switch {
	case len(f) == 3 && f[2] == "parquet" && len(f[0]) == 10 && len(f[1]) == 10 && allDigits(f[0]) && allDigits(f[1]):
		part, _ := strconv.Atoi(f[0])
		parts, _ := strconv.Atoi(f[1])
		if part < 1 || part > parts {
			return logName{}, false
		}
		n.checkpoint, n.kind, n.part, n.parts = true, checkpointMultiPart, part, parts
		return n, true
	case len(f) == 2 && (f[1] == "json" || f[1] == "parquet") && len(f[0]) == 36:
		n.checkpoint, n.kind = true, checkpointUUID
		return n, true
	}
	return logName{}, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// list lists _delta_log whole and keeps the listing as the table's known
// one (see current). Checkpoint files of 0 bytes are skipped (a writer may
// have failed half-way); of the complete checkpoints of a version the
// preferred one is kept (see checkpointKind).
func (t *Table) list(ctx context.Context) (*listing, error) {
	t.lmu.Lock()
	defer t.lmu.Unlock()
	return t.listLocked(ctx)
}

// listLocked is list, with lmu held.
func (t *Table) listLocked(ctx context.Context) (*listing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(t.fsys, logDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: table %q: no %s folder", ErrNotTable, t.name, logDir)
	}
	if err != nil {
		if info, serr := fs.Stat(t.fsys, logDir); serr == nil && !info.IsDir() {
			return nil, fmt.Errorf("%w: table %q: %s is not a folder", ErrNotTable, t.name, logDir)
		}
		return nil, fmt.Errorf("table %q: listing %s: %w", t.name, logDir, err)
	}
	l := &listing{}
	if err := t.collect(l, entries); err != nil {
		return nil, err
	}
	t.known = l
	return l, nil
}

// collect adds the log files of entries, sorted by name, to l: their
// commits and complete checkpoints, and the oldest file as l's origin when
// l has none yet.
func (t *Table) collect(l *listing, entries []fs.DirEntry) error {
	// The candidate checkpoints of the version being grouped: the entries
	// are sorted by name, so a version's files are consecutive.
	var group []checkpointFile
	flush := func() {
		if cp := chooseCheckpoint(group); cp != nil {
			l.checkpoints = append(l.checkpoints, cp)
		}
		group = group[:0]
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if l.origin == "" && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".parquet")) {
			// The entries are sorted by name: the oldest file comes first.
			if info, err := e.Info(); err == nil {
				l.setOrigin(e.Name(), info)
			}
		}
		n, ok := parseLogName(e.Name())
		if !ok {
			continue
		}
		if len(group) > 0 && group[0].version != n.version {
			flush()
		}
		if n.commit {
			l.commits = append(l.commits, n.version)
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by cleanup since the listing
		}
		if err != nil {
			return fmt.Errorf("table %q: %s/%s: %w", t.name, logDir, e.Name(), err)
		}
		if info.Size() == 0 {
			continue
		}
		group = append(group, checkpointFile{logName: n, name: path.Join(logDir, e.Name())})
	}
	flush()
	return nil
}

// checkpointFile is one file of a checkpoint.
type checkpointFile struct {
	logName
	name string
}

// chooseCheckpoint returns the preferred complete checkpoint among the
// files of one version (nil when none is complete): the UUID-named one with
// the greatest name, else the complete multi-part one with the most parts,
// else the classic one. A multi-part checkpoint with a missing part is never
// used.
func chooseCheckpoint(files []checkpointFile) *checkpoint {
	var best *checkpoint
	better := func(c *checkpoint) {
		if best == nil || c.kind > best.kind ||
			(c.kind == best.kind && c.kind == checkpointMultiPart && len(c.files) > len(best.files)) ||
			(c.kind == best.kind && c.kind == checkpointUUID && c.files[0] > best.files[0]) {
			best = c
		}
	}
	multi := map[int]map[int]string{} // parts → part → file
	for _, f := range files {
		switch f.kind {
		case checkpointClassic, checkpointUUID:
			better(&checkpoint{version: f.version, kind: f.kind, files: []string{f.name}})
		case checkpointMultiPart:
			if multi[f.parts] == nil {
				multi[f.parts] = map[int]string{}
			}
			multi[f.parts][f.part] = f.name
		}
	}
	for parts, byPart := range multi {
		if len(byPart) != parts {
			continue
		}
		c := &checkpoint{version: files[0].version, kind: checkpointMultiPart}
		for i := 1; i <= parts; i++ {
			c.files = append(c.files, byPart[i])
		}
		better(c)
	}
	return best
}

// latest returns the newest version with a commit or a checkpoint, -1 for
// an empty log.
func (l *listing) latest() int64 {
	v := int64(-1)
	if n := len(l.commits); n > 0 {
		v = l.commits[n-1]
	}
	if n := len(l.checkpoints); n > 0 {
		v = max(v, l.checkpoints[n-1].version)
	}
	return v
}

// oldestCommit returns the version of the oldest commit file, -1 when there
// is none.
func (l *listing) oldestCommit() int64 {
	if len(l.commits) == 0 {
		return -1
	}
	return l.commits[0]
}

// hasCommits reports whether the commit files of versions from..to (both
// included) are all listed; true when from > to.
func (l *listing) hasCommits(from, to int64) bool {
	if from > to {
		return true
	}
	i := sort.Search(len(l.commits), func(i int) bool { return l.commits[i] >= from })
	j := i + int(to-from)
	return j < len(l.commits) && l.commits[i] == from && l.commits[j] == to
}

// missingCommit returns the oldest version in from..to without a commit
// file; call it only when hasCommits(from, to) is false.
func (l *listing) missingCommit(from, to int64) int64 {
	i := sort.Search(len(l.commits), func(i int) bool { return l.commits[i] >= from })
	for v := from; v <= to; v, i = v+1, i+1 {
		if i >= len(l.commits) || l.commits[i] != v {
			return v
		}
	}
	return to + 1
}

// checkpointAtOrBefore returns the newest checkpoint at or before v, nil
// when there is none.
func (l *listing) checkpointAtOrBefore(v int64) *checkpoint {
	i := sort.Search(len(l.checkpoints), func(i int) bool { return l.checkpoints[i].version > v })
	if i == 0 {
		return nil
	}
	return l.checkpoints[i-1]
}

// runStart returns the first version of the run of consecutive commits
// that ends at the latest version; latest+1 when the latest version has no
// commit.
func (l *listing) runStart() int64 {
	latest := l.latest()
	n := len(l.commits)
	if n == 0 || l.commits[n-1] != latest {
		return latest + 1
	}
	// The commits are ascending and distinct: the run is consecutive
	// exactly when its length is the difference of its ends. Search for
	// the oldest i whose commits i..n-1 are consecutive.
	i := sort.Search(n, func(i int) bool { return latest-l.commits[i] == int64(n-1-i) })
	return l.commits[i]
}

// earliestStart returns Versions.EarliestStart: -1 when every commit from 0
// to the latest is listed, otherwise the oldest checkpoint from which every
// later commit up to the latest is listed. It reports false when there is
// no such checkpoint (no version's state can be rebuilt up to the latest).
func (l *listing) earliestStart() (int64, bool) {
	// first is the first version of the run of consecutive commits that
	// ends at the latest version.
	first := l.runStart()
	if first == 0 {
		return -1, true
	}
	i := sort.Search(len(l.checkpoints), func(i int) bool { return l.checkpoints[i].version >= first-1 })
	if i == len(l.checkpoints) {
		return 0, false
	}
	return l.checkpoints[i].version, true
}

// base returns the checkpoint the state at version v is rebuilt from (nil:
// from the first commit), after checking that the commits after it up to v
// are all listed. Errors name the table and the version: ErrVersionNotFound
// beyond the latest version, ErrLogCleaned when cleanup removed what the
// state needs, ErrCorrupt for a gap in the commits.
func (t *Table) base(l *listing, v int64) (*checkpoint, error) {
	latest := l.latest()
	if latest < 0 {
		return nil, fmt.Errorf("%w: table %q: %s holds no commit and no checkpoint", ErrNotTable, t.name, logDir)
	}
	if v < 0 || v > latest {
		return nil, fmt.Errorf("%w: table %q, version %d: the latest version is %d", ErrVersionNotFound, t.name, v, latest)
	}
	cp := l.checkpointAtOrBefore(v)
	from := int64(0)
	if cp != nil {
		from = cp.version + 1
	}
	if l.hasCommits(from, v) {
		return cp, nil
	}
	missing := l.missingCommit(from, v)
	if oldest := l.oldestCommit(); oldest < 0 || missing < oldest {
		return nil, fmt.Errorf("%w: table %q, version %d: its state needs commit %s, removed by log cleanup; %s",
			ErrLogCleaned, t.name, v, commitFile(missing), l.readable())
	}
	return nil, fmt.Errorf("%w: table %q, version %d: commit %s is missing between %d and %d",
		ErrCorrupt, t.name, v, commitFile(missing), from, v)
}

// readable describes the versions whose state can be read, for messages.
func (l *listing) readable() string {
	es, ok := l.earliestStart()
	switch {
	case !ok:
		return "no version's state can be rebuilt"
	case es < 0:
		return fmt.Sprintf("versions 0 to %d are readable", l.latest())
	default:
		return fmt.Sprintf("the earliest readable version is %d (latest %d)", es, l.latest())
	}
}
