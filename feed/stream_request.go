package feed

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Start modes of a stream (StreamRequest.Start).
const (
	// StartLatestFull streams the full state of the current snapshot as
	// inserts, then the changes of every later commit. The default when the
	// request gives no start, no from field and no Resume.
	StartLatestFull = "latest-full"
	// StartLatest streams the changes after the snapshot current when the
	// stream starts (on an empty table: from its first commit).
	StartLatest = "latest"
	// StartFromSnapshot streams the changes after FromSnapshot.
	StartFromSnapshot = "from-snapshot"
	// StartFromSnapshotFull streams the full state at FromSnapshot, then
	// the changes after it.
	StartFromSnapshotFull = "from-snapshot-full"
	// StartFromTimestamp streams the changes from the first snapshot
	// committed at or after FromTimestampMs.
	StartFromTimestamp = "from-timestamp"
)

// StartModes returns the start modes, the default first.
func StartModes() []string {
	return []string{StartLatestFull, StartLatest, StartFromSnapshot, StartFromSnapshotFull, StartFromTimestamp}
}

// Defaults of FollowOptions.
const (
	DefaultPollInterval       = time.Second
	DefaultHeartbeatInterval  = 5 * time.Second
	DefaultMaxBackoff         = 30 * time.Second
	DefaultMaxWindowSnapshots = 100
)

// FollowOptions tunes how streams and WatchCommits watch a table. Zero
// values take the defaults.
type FollowOptions struct {
	// PollInterval is how often a follow stream reads the table's metadata
	// for new commits. The follow streams and watches of one table share
	// its reads: the table is read once per the shortest PollInterval among
	// them. Default DefaultPollInterval (1s).
	PollInterval time.Duration
	// HeartbeatInterval is how long a follow stream may go without
	// yielding a batch before it yields a 0-row heartbeat. Default
	// DefaultHeartbeatInterval (5s).
	HeartbeatInterval time.Duration
	// MaxBackoff bounds the wait between polls while the catalog fails: the
	// wait doubles from PollInterval up to it. Default DefaultMaxBackoff
	// (30s).
	MaxBackoff time.Duration
	// MaxWindowSnapshots bounds the snapshots of one planned window when a
	// stream catches up with a long history. Default
	// DefaultMaxWindowSnapshots.
	MaxWindowSnapshots int
}

// WithDefaults returns o with every unset field set to its default.
func (o FollowOptions) WithDefaults() FollowOptions {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.PollInterval)
	if o.MaxWindowSnapshots <= 0 {
		o.MaxWindowSnapshots = DefaultMaxWindowSnapshots
	}
	return o
}

// StreamRequest asks for a stream of a table's changes: from a start
// position, window after window up to the snapshot current when the stream
// started, and with Follow on, each later commit as a poll sees it land.
type StreamRequest struct {
	// Request names the table and shapes the changes: Columns, Filter,
	// Identity, FoldUpdates. Its FromSnapshot or FromTimestampMs, when set,
	// is where the stream starts (without Start they mean
	// StartFromSnapshot and StartFromTimestamp; a stream from a time starts
	// with the snapshots committed at or after it). A stream has no end and
	// sends every change: ToSnapshot, ToTimestampMs and NetChanges must be
	// unset.
	Request
	// Follow keeps the stream going once it has caught up: it polls the
	// table and yields heartbeats while there is nothing new. Without it
	// the stream ends at the snapshot current when it started.
	Follow bool
	// Start is the start mode (StartLatestFull, ...); "" for the default.
	Start string
	// Resume, when set, starts the stream right after a durable consumer's
	// acknowledged snapshot, unless FromSnapshot or FromTimestampMs says
	// otherwise (Start then only places a consumer without progress).
	Resume *Resume
	// Options tunes polling, heartbeats and backoff.
	Options FollowOptions
	// Transient reports whether an error may go away by itself (a catalog
	// or storage that could not be reached): a follow stream retries
	// those, with backoff. Nil: errors wrapping ErrStorageUnavailable.
	Transient func(error) bool
	// Retrying, when set, is told of each transient error a follow stream
	// retries and how long it waits first.
	Retrying func(err error, wait time.Duration)
	// OnGap says what the stream does when the snapshot it would go on
	// from has left the table's retained history (see StreamGap):
	// OnGapFail ("", the default) ends the stream with ErrResyncRequired
	// after the gap event, OnGapResync streams the full state at the
	// current snapshot and goes on from it.
	OnGap string
	// YieldPlans makes the stream yield each window and full state it
	// plans as a StreamWindow event, for the consumer to read, instead of
	// reading it and yielding its batches (a server shares one read of a
	// window among the streams that read it at once).
	YieldPlans bool

	// parsed is set by Parse: Stream neither validates nor parses the
	// request again.
	parsed bool
}

// Resume is a durable consumer's acknowledged position.
type Resume struct {
	// Consumer names the consumer, for messages.
	Consumer string
	// Snapshot is the acknowledged snapshot: the consumer has processed
	// every change up to it.
	Snapshot int64
	// CommitSeq is the snapshot's commit_seq, for messages.
	CommitSeq int64
}

// Validate checks the request's shape: the stream fields, and the changes'
// shape as Request.Validate does.
func (r StreamRequest) Validate() error {
	_, err := r.Parse()
	return err
}

// Parse validates the request (see Validate) and parses its filter, once:
// Stream neither validates nor parses a parsed request again (see
// Request.Parse for the fields that may change after it).
func (r StreamRequest) Parse() (StreamRequest, error) {
	if r.parsed {
		return r, nil
	}
	bad := func(format string, args ...any) (StreamRequest, error) {
		return r, fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	from, fromTs, fromRef := r.FromSnapshot, r.FromTimestampMs, r.FromRef
	hasFrom := from != nil || fromRef != ""
	switch {
	case r.ToSnapshot != nil || r.ToTimestampMs != nil || r.ToRef != "":
		return bad("a stream (follow, start or consumer) has no end: leave out to_snapshot, to_timestamp_ms and to_ref")
	case r.NetChanges:
		return bad("net_changes collapses a window; a stream (follow, start or consumer) sends every change")
	case from != nil && fromTs != nil:
		return bad("give from_snapshot or from_timestamp_ms, not both")
	case fromRef != "" && (from != nil || fromTs != nil):
		return bad("give one of from_ref, from_snapshot and from_timestamp_ms")
	case r.Start != "" && !slices.Contains(StartModes(), r.Start):
		return bad("start %s: want %s", quoteName(r.Start), strings.Join(StartModes(), ", "))
	case r.OnGap != OnGapFail && r.OnGap != OnGapResync:
		return bad("on_gap %s: want %q (end the stream with FAILED_PRECONDITION) or %q", quoteName(r.OnGap),
			OnGapFail, OnGapResync)
	}
	switch r.Start {
	case StartFromSnapshot, StartFromSnapshotFull:
		if !hasFrom {
			return bad("start %q needs from_snapshot (or from_ref)", r.Start)
		}
	case StartFromTimestamp:
		if fromTs == nil {
			return bad("start %q needs from_timestamp_ms", r.Start)
		}
	}
	if hasFrom && r.Start != "" && r.Start != StartFromSnapshot && r.Start != StartFromSnapshotFull {
		return bad("from_snapshot goes with start %q or %q, not %q", StartFromSnapshot, StartFromSnapshotFull, r.Start)
	}
	if fromTs != nil && r.Start != "" && r.Start != StartFromTimestamp {
		return bad("from_timestamp_ms goes with start %q, not %q", StartFromTimestamp, r.Start)
	}
	shape := r.Request
	shape.FromSnapshot, shape.FromTimestampMs, shape.FromRef = nil, nil, ""
	shape, err := shape.Parse()
	if err != nil {
		return r, err
	}
	shape.FromSnapshot, shape.FromTimestampMs, shape.FromRef = from, fromTs, fromRef
	r.Request, r.parsed = shape, true
	return r, nil
}

// maxNameBytes is how much of a client-supplied name a message repeats.
const maxNameBytes = 200

// quoteName quotes a client-supplied name for a message, cut to its first
// maxNameBytes bytes (and the count of all of them) when it is longer, so
// that no name of any length makes a message large.
func quoteName(name string) string {
	if len(name) <= maxNameBytes {
		return fmt.Sprintf("%q", name)
	}
	cut := maxNameBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…(%d bytes)", name[:cut], len(name))
}
