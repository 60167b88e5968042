package progress

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the pure-Go "sqlite" database/sql driver
)

// Key names a consumer's progress: a consumer id on a table's branch or
// tag. The same id on two refs of a table names two consumers, each with
// its own progress and owner.
type Key struct {
	// Table is "namespace.table".
	Table string
	// Ref is the branch or tag whose lineage the consumer follows; "" is
	// the main branch (and every record written before refs were kept).
	Ref string
	// Consumer is the consumer id.
	Consumer string
}

// String describes the key for messages: `consumer "c" on table t`, with
// ` (ref "r")` when the ref is not the main branch.
func (k Key) String() string {
	out := fmt.Sprintf("consumer %q on table %s", k.Consumer, k.Table)
	if k.Ref != "" {
		out += fmt.Sprintf(" (ref %q)", k.Ref)
	}
	return out
}

// Checkpoint is a consumer's acknowledged position on a table's branch or
// tag.
type Checkpoint struct {
	// Table is "namespace.table".
	Table string
	// Ref is the branch or tag the consumer follows ("" for the main
	// branch).
	Ref string
	// Consumer is the consumer id.
	Consumer string
	// Snapshot is the acknowledged snapshot: the consumer has processed
	// every change up to and including it.
	Snapshot int64
	// CommitSeq and TimestampMs are the snapshot's commit sequence and
	// commit time, kept so that progress whose snapshot has expired can
	// still be placed in the table's history.
	CommitSeq   int64
	TimestampMs int64
	// AckedAt is when the acknowledgement was recorded.
	AckedAt time.Time
	// Owner is the principal that owns the consumer on the table: the one
	// that first claimed it (Claim, a stream naming it) or recorded its
	// first acknowledgement, or that the configuration named (Assign); only
	// it may move or reset the progress. Empty for progress recorded before
	// owners were kept, which the next principal to claim or acknowledge it
	// adopts.
	Owner string
	// Protected is set when the acknowledgement asked that the snapshot be
	// kept from the table's expiry (see the server's --protect-consumers).
	Protected bool
}

// Key returns the key of the checkpoint's consumer.
func (c Checkpoint) Key() Key { return Key{Table: c.Table, Ref: c.Ref, Consumer: c.Consumer} }

// Dialects of a Store.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// sqliteBusyTimeoutMs is how long a SQLite write waits for a lock held by
// another connection or process.
const sqliteBusyTimeoutMs = 10000

// Store keeps consumer progress in a SQL database. It is safe for
// concurrent use.
type Store struct {
	db      *sql.DB
	dialect string
}

// Open opens (creating its table when absent) the progress store that dsn
// names: a SQLite file as a path, file:///abs/path or sqlite:///path, or a
// PostgreSQL database as postgres://... or postgresql://.... The parent
// directory of a SQLite file must exist.
func Open(ctx context.Context, dsn string) (*Store, error) {
	driver, source, dialect, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrUnavailable, Redact(dsn), err)
	}
	if dialect == DialectSQLite {
		// One connection: writes to a SQLite file serialize anyway, and
		// this keeps them from failing with "database is locked".
		db.SetMaxOpenConns(1)
	}
	s := &Store{db: db, dialect: dialect}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, Redact(dsn), err)
	}
	return s, nil
}

// parseDSN returns the database/sql driver and data source of a DSN.
func parseDSN(dsn string) (driver, source, dialect string, err error) {
	dsn = strings.TrimSpace(dsn)
	switch {
	case dsn == "":
		return "", "", "", fmt.Errorf("%w: empty DSN", ErrInvalidDSN)
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "pgx", dsn, DialectPostgres, nil
	case strings.HasPrefix(dsn, "file://"):
		u, perr := url.Parse(dsn)
		if perr != nil || (u.Host != "" && u.Host != "localhost") {
			return "", "", "", fmt.Errorf("%w: %q: a file URI must be file:///absolute/path", ErrInvalidDSN, dsn)
		}
		dsn = u.Path
	case strings.HasPrefix(dsn, "sqlite:///"):
		dsn = strings.TrimPrefix(dsn, "sqlite:///")
		if !strings.HasPrefix(dsn, "/") {
			dsn = "./" + dsn
		}
	case strings.Contains(dsn, "://"):
		return "", "", "", fmt.Errorf("%w: %q: want a SQLite file (a path, file:///path or sqlite:///path) "+
			"or postgres://user@host/db", ErrInvalidDSN, Redact(dsn))
	}
	abs, aerr := filepath.Abs(dsn)
	if aerr != nil {
		return "", "", "", fmt.Errorf("%w: %q: %v", ErrInvalidDSN, dsn, aerr)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeoutMs))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	src := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	return "sqlite", src, DialectSQLite, nil
}

// Redact returns dsn with any password replaced by "xxxxx", for messages
// and logs.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}

// Dialect returns DialectSQLite or DialectPostgres.
func (s *Store) Dialect() string { return s.dialect }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// query rewrites ? placeholders for the dialect ($1, $2... for
// PostgreSQL).
func (s *Store) query(q string) string {
	if s.dialect != DialectPostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Put records a checkpoint, replacing the consumer's previous one on the
// table, as c.Owner: the first Put or Claim of a consumer on a table makes
// c.Owner its owner, and a Put by another principal fails with an error
// wrapping ErrNotOwner, atomically. It returns once the write is committed.
// A zero AckedAt is set to the current time.
func (s *Store) Put(ctx context.Context, c Checkpoint) error {
	if c.AckedAt.IsZero() {
		c.AckedAt = time.Now()
	}
	res, err := s.db.ExecContext(ctx, s.query(`INSERT INTO sluice_consumer_progress
		(table_name, ref, consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner, acked, protected)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (table_name, ref, consumer) DO UPDATE SET snapshot_id = excluded.snapshot_id,
		commit_seq = excluded.commit_seq, timestamp_ms = excluded.timestamp_ms, acked_at_ms = excluded.acked_at_ms,
		owner = excluded.owner, acked = 1, protected = excluded.protected
		WHERE sluice_consumer_progress.owner IN ('', excluded.owner)`),
		c.Table, c.Ref, c.Consumer, c.Snapshot, c.CommitSeq, c.TimestampMs, c.AckedAt.UnixMilli(), c.Owner,
		boolInt(c.Protected))
	return s.owned(ctx, res, err, "record the progress of "+c.Key().String(), c.Key(), c.Owner)
}

// Claim makes principal the owner of the consumer k unless another
// principal owns it (an error wrapping ErrNotOwner), atomically: a
// consumer without progress gets a claim, which Get and List do not show
// and Delete removes; progress without an owner is adopted.
func (s *Store) Claim(ctx context.Context, k Key, principal string) error {
	res, err := s.db.ExecContext(ctx, s.query(`INSERT INTO sluice_consumer_progress
		(table_name, ref, consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner, acked)
		VALUES (?, ?, ?, 0, 0, 0, ?, ?, 0)
		ON CONFLICT (table_name, ref, consumer) DO UPDATE SET owner = excluded.owner
		WHERE sluice_consumer_progress.owner IN ('', excluded.owner)`),
		k.Table, k.Ref, k.Consumer, time.Now().UnixMilli(), principal)
	return s.owned(ctx, res, err, "claim "+k.String(), k, principal)
}

// Assign makes principal the owner of the consumer k, whoever owned it:
// the configuration fixes the owner of some consumers. Progress that
// another principal recorded is dropped (it was never principal's);
// progress without an owner is adopted. A consumer without progress gets a
// claim, as with Claim.
func (s *Store) Assign(ctx context.Context, k Key, principal string) error {
	_, err := s.db.ExecContext(ctx, s.query(`INSERT INTO sluice_consumer_progress
		(table_name, ref, consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner, acked)
		VALUES (?, ?, ?, 0, 0, 0, ?, ?, 0)
		ON CONFLICT (table_name, ref, consumer) DO UPDATE SET owner = excluded.owner,
		acked = CASE WHEN sluice_consumer_progress.owner IN ('', excluded.owner)
			THEN sluice_consumer_progress.acked ELSE 0 END`),
		k.Table, k.Ref, k.Consumer, time.Now().UnixMilli(), principal)
	if err != nil {
		return s.fail(ctx, fmt.Sprintf("assign %s to %q", k, principal), err)
	}
	return nil
}

// owned checks the result of a write that applies only when principal owns
// the consumer (or nobody does): no row written means another principal
// owns it.
func (s *Store) owned(ctx context.Context, res sql.Result, err error, what string, k Key, principal string) error {
	if err != nil {
		return s.fail(ctx, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail(ctx, what, err)
	}
	if n > 0 {
		return nil
	}
	owner, err := s.owner(ctx, k)
	if err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("%w: %s: the consumer was reset meanwhile; try again", ErrUnavailable, what)
	}
	return notOwner(k, owner, principal)
}

// owner returns the owner of the consumer k, as a claim or with progress
// ("" for none).
func (s *Store) owner(ctx context.Context, k Key) (string, error) {
	var owner string
	err := s.db.QueryRowContext(ctx, s.query(`SELECT owner FROM sluice_consumer_progress
		WHERE table_name = ? AND ref = ? AND consumer = ?`), k.Table, k.Ref, k.Consumer).Scan(&owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", s.fail(ctx, "read the owner of "+k.String(), err)
	}
	return owner, nil
}

// notOwner is the ErrNotOwner error of a write by principal to a consumer
// that another principal owns.
func notOwner(k Key, owner, principal string) error {
	return fmt.Errorf("%w: %s belongs to principal %q, not %q", ErrNotOwner, k, owner, principal)
}

// Get returns the checkpoint of the consumer k, or an error wrapping
// ErrNotFound.
func (s *Store) Get(ctx context.Context, k Key) (Checkpoint, error) {
	row := s.db.QueryRowContext(ctx, s.query(`SELECT snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner,
		protected FROM sluice_consumer_progress WHERE table_name = ? AND ref = ? AND consumer = ? AND acked = 1`),
		k.Table, k.Ref, k.Consumer)
	c := Checkpoint{Table: k.Table, Ref: k.Ref, Consumer: k.Consumer}
	var acked, protected int64
	if err := row.Scan(&c.Snapshot, &c.CommitSeq, &c.TimestampMs, &acked, &c.Owner, &protected); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Checkpoint{}, fmt.Errorf("%w: %s has no progress", ErrNotFound, k)
		}
		return Checkpoint{}, s.fail(ctx, "read the progress of "+k.String(), err)
	}
	c.AckedAt, c.Protected = time.UnixMilli(acked), protected != 0
	return c, nil
}

// List returns the checkpoints of every consumer of the table, on every
// ref, by consumer id and ref (the main branch's first).
func (s *Store) List(ctx context.Context, table string) ([]Checkpoint, error) {
	return s.list(ctx, "list the consumers of table "+table, `SELECT table_name, ref, consumer, snapshot_id,
		commit_seq, timestamp_ms, acked_at_ms, owner, protected FROM sluice_consumer_progress
		WHERE table_name = ? AND acked = 1 ORDER BY consumer, ref`, table)
}

// ListProtected returns the checkpoints of every protected consumer (see
// Checkpoint.Protected) of every table, by table, consumer id and ref.
func (s *Store) ListProtected(ctx context.Context) ([]Checkpoint, error) {
	return s.list(ctx, "list the protected consumers", `SELECT table_name, ref, consumer, snapshot_id, commit_seq,
		timestamp_ms, acked_at_ms, owner, protected FROM sluice_consumer_progress WHERE acked = 1 AND protected = 1
		ORDER BY table_name, consumer, ref`)
}

// list returns the checkpoints a query selects (what describes it for
// errors).
func (s *Store) list(ctx context.Context, what, q string, args ...any) ([]Checkpoint, error) {
	rows, err := s.db.QueryContext(ctx, s.query(q), args...)
	if err != nil {
		return nil, s.fail(ctx, what, err)
	}
	defer rows.Close()
	out := []Checkpoint{}
	for rows.Next() {
		var c Checkpoint
		var acked, protected int64
		if err := rows.Scan(&c.Table, &c.Ref, &c.Consumer, &c.Snapshot, &c.CommitSeq, &c.TimestampMs, &acked, &c.Owner,
			&protected); err != nil {
			return nil, s.fail(ctx, what, err)
		}
		c.AckedAt, c.Protected = time.UnixMilli(acked), protected != 0
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, what, err)
	}
	return out, nil
}

// boolInt is a bool as the database's integer.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Delete forgets the progress (or claim) of the consumer k, as principal,
// and reports whether it had progress; a consumer that another principal
// owns is left alone, with an error wrapping ErrNotOwner. Once deleted,
// the consumer is free: the next principal to claim or acknowledge it
// owns it. The consumers of the same id on the table's other refs are
// left alone.
func (s *Store) Delete(ctx context.Context, k Key, principal string) (bool, error) {
	var acked int
	err := s.db.QueryRowContext(ctx, s.query(`DELETE FROM sluice_consumer_progress
		WHERE table_name = ? AND ref = ? AND consumer = ? AND owner IN ('', ?) RETURNING acked`),
		k.Table, k.Ref, k.Consumer, principal).Scan(&acked)
	switch {
	case err == nil:
		return acked == 1, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, s.fail(ctx, "reset "+k.String(), err)
	}
	owner, err := s.owner(ctx, k)
	if err != nil || owner == "" {
		return false, err // nothing to delete
	}
	return false, notOwner(k, owner, principal)
}

// fail wraps a database error: the caller's cancellation as it is, any
// other failure as ErrUnavailable.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
}
