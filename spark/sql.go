package spark

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// The columns a read's query adds to the data columns; no table column may
// have these names.
const (
	colKind    = "__sluice_kind"    // the raw _change_type
	colVersion = "__sluice_version" // the Delta version or Iceberg snapshot id
	colOrdinal = "__sluice_ordinal" // the commit's position in the window
	colTime    = "__sluice_ts"      // the commit time (Delta only)
	colKey     = "__sluice_key"     // what pairs an update: row id or identity
	colImage   = "__sluice_image"   // the whole after/before image of an update, as JSON
	colKeep    = "__sluice_keep"    // the filter's verdict on the change (or its pair)
)

// The _change_type values of both dialects that the query orders by (an
// insert is any other value; ParseChangeType refuses unknown ones).
var (
	deleteKinds = []string{"delete", "DELETE"}
	beforeKinds = []string{"update_preimage", "UPDATE_BEFORE"}
	afterKinds  = []string{"update_postimage", "UPDATE_AFTER"}
)

// changesOptions is CHANGES' WITH clause: updates computed (paired by row
// id), carry-over rows dropped, or the window's net changes.
func changesOptions(net bool) string {
	mode := "dropCarryovers"
	if net {
		mode = "netChanges"
	}
	return " WITH ('computeUpdates' = 'true', 'deduplicationMode' = '" + mode + "')"
}

// changelogWindow is a window of snapshot ids for Iceberg's changelog view
// (or of versions for CHANGES): from exclusive, to inclusive.
type changelogWindow struct {
	from, to int64
	hasFrom  bool  // else: from the table's first commit, included
	first    int64 // the table's first commit (CHANGES without from)
}

// changesClause is CHANGES' range for w.
func (w changelogWindow) changesClause() string {
	if w.hasFrom {
		return fmt.Sprintf("FROM VERSION %d EXCLUSIVE TO VERSION %d", w.from, w.to)
	}
	return fmt.Sprintf("FROM VERSION %d TO VERSION %d", w.first, w.to)
}

var plainString = regexp.MustCompile("^[A-Za-z0-9_.`]*$")

// stringLiteral writes s as a SQL string literal: quoted when it is made of
// letters, digits, dots, backquotes and underscores, else as hex bytes cast
// to a string, so that no quote or backslash of s meets the parser.
func stringLiteral(s string) string {
	if plainString.MatchString(s) {
		return "'" + s + "'"
	}
	return "CAST(X'" + strings.ToUpper(hex.EncodeToString([]byte(s))) + "' AS STRING)"
}

// changelogViewCall is the CALL that creates Iceberg's changelog view of w
// in a temporary view of a new name, which it returns (quoted).
func changelogViewCall(name TableName, w changelogWindow, identity []string, net bool) (view, call string, err error) {
	if len(name) < 3 {
		return "", "", fmt.Errorf("%w: name the Iceberg table %s with its catalog (catalog.namespace.table)",
			ErrInvalidRequest, name)
	}
	catalog, err := quoteIdent(name[0])
	if err != nil {
		return "", "", err
	}
	inner := TableName(name[1:]).String()
	viewName := "sluice_changes_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	var b strings.Builder
	fmt.Fprintf(&b, "CALL %s.system.create_changelog_view(table => %s, changelog_view => '%s'", catalog,
		stringLiteral(inner), viewName)
	opts := []string{"'end-snapshot-id', '" + strconv.FormatInt(w.to, 10) + "'"}
	if w.hasFrom {
		opts = append([]string{"'start-snapshot-id', '" + strconv.FormatInt(w.from, 10) + "'"}, opts...)
	}
	fmt.Fprintf(&b, ", options => map(%s)", strings.Join(opts, ", "))
	if len(identity) > 0 && !net {
		ids := make([]string, len(identity))
		for i, c := range identity {
			if c == "" {
				return "", "", fmt.Errorf("%w: an empty identity column", ErrInvalidRequest)
			}
			ids[i] = stringLiteral(c)
		}
		fmt.Fprintf(&b, ", compute_updates => true, identifier_columns => array(%s)", strings.Join(ids, ", "))
	}
	if net {
		b.WriteString(", net_changes => true")
	}
	b.WriteString(")")
	return "`" + viewName + "`", b.String(), nil
}

// dropView drops a temporary view, with a context of its own: the read's
// may have ended.
func (s *Session) dropView(ctx context.Context, view string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	if err := s.Exec(ctx, "DROP VIEW IF EXISTS "+view); err != nil {
		s.log.Warn("spark: dropping a changelog view failed", "remote", s.remote.String(), "view", view, "err", err)
	}
}

// query is the SQL of one window read.
type query struct {
	// call creates Iceberg's changelog view (empty for CHANGES); view is
	// its name, to drop after the read.
	call, view string
	// sql is the query; its result is the projected columns, then
	// colKind, colVersion, colTime and, when image is set, colImage.
	sql   string
	image bool
}

// buildQuery writes the SQL of a window read of req over data (the table's
// data columns, in order), for w.
func buildQuery(req Request, data []string, w changelogWindow) (query, error) {
	var q query
	for _, c := range data {
		if strings.HasPrefix(c, "__sluice_") {
			return q, fmt.Errorf("%w: table %s has a column named %s, which Sluice's Spark queries use",
				ErrInvalidRequest, req.Table.Name, c)
		}
	}
	proj := req.Columns
	if len(proj) == 0 {
		proj = data
	}
	seen := map[string]bool{}
	for _, c := range proj {
		if !slices.Contains(data, c) {
			return q, fmt.Errorf("%w: table %s has no column %q", ErrInvalidRequest, req.Table.Name, c)
		}
		if seen[c] {
			return q, fmt.Errorf("%w: column %q is projected twice", ErrInvalidRequest, c)
		}
		seen[c] = true
	}
	for _, c := range req.Identity {
		if !slices.Contains(data, c) {
			return q, fmt.Errorf("%w: table %s has no identity column %q", ErrInvalidRequest, req.Table.Name, c)
		}
	}
	if req.Filter != nil {
		req.Filter = wholeNames(req.Filter, data)
		for _, c := range columns(req.Filter, nil) {
			if !slices.Contains(data, c) {
				return q, fmt.Errorf("%w: table %s has no filter column %q", ErrInvalidRequest, req.Table.Name, c)
			}
		}
	}
	dataList, err := identList(data)
	if err != nil {
		return q, err
	}
	var source string
	switch req.Engine {
	case EngineSparkNative:
		name, err := req.Table.Name.SQL()
		if err != nil {
			return q, err
		}
		key := "CAST(NULL AS BIGINT)"
		if req.Table.Format == Delta {
			key = "`_metadata`.`row_id`"
		}
		source = fmt.Sprintf("SELECT %s, `_change_type` AS `%s`, `_commit_version` AS `%s`, `_commit_version` AS `%s`, "+
			"`_commit_timestamp` AS `%s`, %s AS `%s` FROM %s CHANGES %s%s",
			dataList, colKind, colVersion, colOrdinal, colTime, key, colKey, name, w.changesClause(), changesOptions(req.NetChanges))
	case EngineIcebergChangelogView:
		q.view, q.call, err = changelogViewCall(req.Table.Name, w, req.Identity, req.NetChanges)
		if err != nil {
			return q, err
		}
		key := "CAST(NULL AS BIGINT)"
		if len(req.Identity) > 0 && !req.NetChanges {
			ids, err := identList(req.Identity)
			if err != nil {
				return q, err
			}
			key = "struct(" + ids + ")"
		}
		source = fmt.Sprintf("SELECT %s, `_change_type` AS `%s`, `_commit_snapshot_id` AS `%s`, `_change_ordinal` AS `%s`, "+
			"CAST(NULL AS TIMESTAMP) AS `%s`, %s AS `%s` FROM %s",
			dataList, colKind, colVersion, colOrdinal, colTime, key, colKey, q.view)
	default:
		return q, fmt.Errorf("%w: engine %q does not read through Spark", ErrInvalidRequest, req.Engine)
	}
	isUpdate := fmt.Sprintf("`%s` IN (%s)", colKind, kindList(append(slices.Clone(beforeKinds), afterKinds...)))
	if req.Filter != nil {
		pred, err := FilterSQL(req.Filter)
		if err != nil {
			return q, err
		}
		// A change matches when its image does (SPEC §3): an insert's or
		// update_after's when the filter is true, a delete's or
		// update_before's unless it is false (a null in a filtered column
		// keeps a delete). An update pair is kept or dropped whole: it is
		// kept when either image matches.
		own := fmt.Sprintf("CASE WHEN `%s` IN (%s) THEN coalesce(%s, true) ELSE coalesce(%s, false) END",
			colKind, kindList(append(slices.Clone(deleteKinds), beforeKinds...)), pred, pred)
		source = fmt.Sprintf("SELECT * FROM (SELECT *, CASE WHEN %s THEN max(%s) OVER (PARTITION BY `%s`, `%s`, %s) "+
			"ELSE %s END AS `%s` FROM (%s)) WHERE `%s`",
			isUpdate, own, colOrdinal, colVersion, "`"+colKey+"`", own, colKeep, source, colKeep)
	}
	projList, err := identList(proj)
	if err != nil {
		return q, err
	}
	out := fmt.Sprintf("%s, `%s`, `%s`, `%s`", projList, colKind, colVersion, colTime)
	if len(proj) < len(data) {
		// No-op updates are cancelled by comparing whole images, which
		// a projection may not hold.
		q.image = true
		out += fmt.Sprintf(", CASE WHEN %s THEN to_json(struct(%s)) END AS `%s`", isUpdate, dataList, colImage)
	}
	rank := fmt.Sprintf("CASE WHEN `%s` IN (%s) THEN 0 WHEN %s THEN 1 ELSE 2 END", colKind, kindList(deleteKinds), isUpdate)
	after := fmt.Sprintf("CASE WHEN `%s` IN (%s) THEN 1 ELSE 0 END", colKind, kindList(afterKinds))
	q.sql = fmt.Sprintf("SELECT %s FROM (%s) ORDER BY `%s`, %s, `%s`, %s", out, source, colOrdinal, rank, colKey, after)
	return q, nil
}

// identList is the quoted names, comma-separated.
func identList(names []string) (string, error) {
	q := make([]string, len(names))
	for i, n := range names {
		var err error
		if q[i], err = quoteIdent(n); err != nil {
			return "", err
		}
	}
	return strings.Join(q, ", "), nil
}

// kindList is the quoted change types, comma-separated.
func kindList(kinds []string) string {
	q := make([]string, len(kinds))
	for i, k := range kinds {
		q[i] = "'" + k + "'"
	}
	return strings.Join(q, ", ")
}
