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

// Checkpoint is a consumer's acknowledged position on a table.
type Checkpoint struct {
	// Table is "namespace.table".
	Table string
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
	// Owner is the principal that recorded the consumer's first
	// acknowledgement on the table; only it may move or reset the
	// progress. Empty for progress recorded before owners were kept,
	// which the next acknowledgement's principal adopts.
	Owner string
}

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

const schema = `CREATE TABLE IF NOT EXISTS sluice_consumer_progress (
	table_name   TEXT   NOT NULL,
	consumer     TEXT   NOT NULL,
	snapshot_id  BIGINT NOT NULL,
	commit_seq   BIGINT NOT NULL,
	timestamp_ms BIGINT NOT NULL,
	acked_at_ms  BIGINT NOT NULL,
	owner        TEXT   NOT NULL DEFAULT '',
	PRIMARY KEY (table_name, consumer)
)`

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	// Stores made before owners were kept lack the column.
	if _, err := s.db.ExecContext(ctx, `SELECT owner FROM sluice_consumer_progress WHERE 1 = 0`); err != nil {
		if _, err := s.db.ExecContext(ctx,
			`ALTER TABLE sluice_consumer_progress ADD COLUMN owner TEXT NOT NULL DEFAULT ''`); err != nil {
			return fmt.Errorf("add the owner column: %w", err)
		}
	}
	return nil
}

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
// table, as c.Owner: the first Put of a consumer on a table makes c.Owner
// its owner, and a Put by another principal fails with an error wrapping
// ErrNotOwner, atomically. It returns once the write is committed. A zero
// AckedAt is set to the current time.
func (s *Store) Put(ctx context.Context, c Checkpoint) error {
	if c.AckedAt.IsZero() {
		c.AckedAt = time.Now()
	}
	res, err := s.db.ExecContext(ctx, s.query(`INSERT INTO sluice_consumer_progress
		(table_name, consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (table_name, consumer) DO UPDATE SET snapshot_id = excluded.snapshot_id,
		commit_seq = excluded.commit_seq, timestamp_ms = excluded.timestamp_ms, acked_at_ms = excluded.acked_at_ms,
		owner = excluded.owner
		WHERE sluice_consumer_progress.owner IN ('', excluded.owner)`),
		c.Table, c.Consumer, c.Snapshot, c.CommitSeq, c.TimestampMs, c.AckedAt.UnixMilli(), c.Owner)
	what := fmt.Sprintf("record the progress of consumer %q on table %s", c.Consumer, c.Table)
	if err != nil {
		return s.fail(ctx, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail(ctx, what, err)
	}
	if n == 0 {
		cp, err := s.Get(ctx, c.Table, c.Consumer)
		if err != nil {
			return err
		}
		return notOwner(cp, c.Owner)
	}
	return nil
}

// notOwner is the ErrNotOwner error of a write by principal to progress
// that another principal owns.
func notOwner(cp Checkpoint, principal string) error {
	return fmt.Errorf("%w: consumer %q on table %s belongs to principal %q, not %q", ErrNotOwner, cp.Consumer,
		cp.Table, cp.Owner, principal)
}

// Get returns the consumer's checkpoint on the table, or an error wrapping
// ErrNotFound.
func (s *Store) Get(ctx context.Context, table, consumer string) (Checkpoint, error) {
	row := s.db.QueryRowContext(ctx, s.query(`SELECT snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner
		FROM sluice_consumer_progress WHERE table_name = ? AND consumer = ?`), table, consumer)
	c := Checkpoint{Table: table, Consumer: consumer}
	var acked int64
	if err := row.Scan(&c.Snapshot, &c.CommitSeq, &c.TimestampMs, &acked, &c.Owner); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Checkpoint{}, fmt.Errorf("%w: consumer %q has no progress on table %s", ErrNotFound, consumer, table)
		}
		return Checkpoint{}, s.fail(ctx, fmt.Sprintf("read the progress of consumer %q on table %s", consumer, table), err)
	}
	c.AckedAt = time.UnixMilli(acked)
	return c, nil
}

// List returns the checkpoints of every consumer of the table, by consumer
// id.
func (s *Store) List(ctx context.Context, table string) ([]Checkpoint, error) {
	rows, err := s.db.QueryContext(ctx, s.query(`SELECT consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms,
		owner FROM sluice_consumer_progress WHERE table_name = ? ORDER BY consumer`), table)
	if err != nil {
		return nil, s.fail(ctx, "list the consumers of table "+table, err)
	}
	defer rows.Close()
	out := []Checkpoint{}
	for rows.Next() {
		c := Checkpoint{Table: table}
		var acked int64
		if err := rows.Scan(&c.Consumer, &c.Snapshot, &c.CommitSeq, &c.TimestampMs, &acked, &c.Owner); err != nil {
			return nil, s.fail(ctx, "list the consumers of table "+table, err)
		}
		c.AckedAt = time.UnixMilli(acked)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "list the consumers of table "+table, err)
	}
	return out, nil
}

// Delete forgets the consumer's progress on the table, as principal, and
// reports whether there was any; progress that another principal owns is
// left alone, with an error wrapping ErrNotOwner.
func (s *Store) Delete(ctx context.Context, table, consumer, principal string) (bool, error) {
	what := fmt.Sprintf("reset consumer %q on table %s", consumer, table)
	res, err := s.db.ExecContext(ctx, s.query(`DELETE FROM sluice_consumer_progress
		WHERE table_name = ? AND consumer = ? AND owner IN ('', ?)`), table, consumer, principal)
	if err != nil {
		return false, s.fail(ctx, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.fail(ctx, what, err)
	}
	if n == 0 {
		cp, err := s.Get(ctx, table, consumer)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return false, notOwner(cp, principal)
	}
	return true, nil
}

// fail wraps a database error: the caller's cancellation as it is, any
// other failure as ErrUnavailable.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
}
