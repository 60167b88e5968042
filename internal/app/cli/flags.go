package cli

import (
	"flag"
	"strconv"
	"strings"
	"time"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// listFlag is a comma-separated list; repeating the flag adds to it.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// point is a position in a table's history: a snapshot id (or Delta
// version), or a commit time.
type point struct {
	snapshot *int64
	tsMs     *int64
}

// timeLayouts are the commit times --from and --to accept, besides a
// snapshot id; without a zone they are UTC.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"}

// parsePoint reads a snapshot id or a commit time.
func parsePoint(flagName, v string) (point, error) {
	if v == "" {
		return point{}, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return point{snapshot: &n}, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			ms := t.UnixMilli()
			return point{tsMs: &ms}, nil
		}
	}
	return point{}, usagef("--%s %q: want a snapshot id (or Delta version) or a commit time such as 2026-11-30T08:00:00Z or 2026-11-30", flagName, v)
}

// requestFlags are the flags of a change request, shared by changes and
// explain.
type requestFlags struct {
	from, to, filter, compression, layout, ref string
	columns, identity                          listFlag
	net, fold, lineage                         bool
}

func (r *requestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.from, "from", "", "the window's exclusive start: a snapshot `id` (Delta: a version) or a commit time (2026-11-30T08:00:00Z); default: the start of the history")
	fs.StringVar(&r.to, "to", "", "the window's inclusive end: a snapshot `id` or a commit time, as --from; default: the current snapshot")
	fs.Var(&r.columns, "columns", "the data `columns` of the images, comma-separated, in this order (default: all)")
	fs.StringVar(&r.filter, "filter", "", "a SQL boolean `expression` over data columns, such as \"country = 'SE' AND amount > 10\"")
	fs.Var(&r.identity, "identity", "identity `columns`, comma-separated, to pair updates (default: the table's identifier fields)")
	fs.BoolVar(&r.net, "net", false, "the net changes of the window per identity")
	fs.BoolVar(&r.fold, "fold", false, "fold each update_before/update_after pair into one update row")
	fs.StringVar(&r.compression, "compression", "", "the stream's compression: lz4 or zstd (default none)")
	fs.StringVar(&r.ref, "ref", "", "the branch or tag `name` whose lineage the window runs on (default: the main branch)")
	fs.BoolVar(&r.lineage, "lineage", false, "add each row's id (_row_id) to the images, for a table that keeps row lineage")
	layoutFlag(fs, &r.layout)
}

// layoutFlag is --layout: renderable (op, before, after, snapshot, ts) or
// flat (the image's columns, then _change_type, _commit_version,
// _commit_timestamp, as Delta's change data feed).
func layoutFlag(fs *flag.FlagSet, v *string) {
	fs.StringVar(v, "layout", "renderable", "the `layout` of the change rows: renderable (op, before, after, snapshot, ts) or flat "+
		"(the image's columns, then _change_type, _commit_version, _commit_timestamp, as Delta's change data feed; not with --fold)")
}

// layoutValue maps --layout to the request's Layout.
func layoutValue(v string) (string, error) {
	switch v {
	case "renderable", "":
		return sluice.LayoutRenderable, nil
	case "flat":
		return sluice.LayoutFlat, nil
	}
	return "", usagef("--layout %q: want renderable or flat", v)
}

// request builds the ChangeRequest of table.
func (r *requestFlags) request(table string) (sluice.ChangeRequest, error) {
	from, err := parsePoint("from", r.from)
	if err != nil {
		return sluice.ChangeRequest{}, err
	}
	to, err := parsePoint("to", r.to)
	if err != nil {
		return sluice.ChangeRequest{}, err
	}
	layout, err := layoutValue(r.layout)
	if err != nil {
		return sluice.ChangeRequest{}, err
	}
	return sluice.ChangeRequest{Table: table, FromSnapshot: from.snapshot, FromTimestampMs: from.tsMs,
		ToSnapshot: to.snapshot, ToTimestampMs: to.tsMs, Columns: r.columns, Filter: r.filter,
		Identity: r.identity, FoldUpdates: r.fold, NetChanges: r.net, Compression: r.compression, Layout: layout,
		Ref: r.ref, Lineage: r.lineage}, nil
}

// oneTable checks that args name exactly one table.
func oneTable(args []string) (string, error) {
	switch len(args) {
	case 1:
		return args[0], nil
	case 0:
		return "", usagef("name a table (namespace.table; 'sluice tables' lists them)")
	}
	return "", usagef("one table, not %d arguments: %s", len(args), strings.Join(args, " "))
}
