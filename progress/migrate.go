package progress

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// progressColumns is the layout of the progress table, keyed by table,
// ref and consumer. A row whose acked is 0 is a claim: a consumer with an
// owner and no progress yet; Get and List show only rows with progress.
const progressColumns = `(
	table_name   TEXT   NOT NULL,
	ref          TEXT   NOT NULL DEFAULT '',
	consumer     TEXT   NOT NULL,
	snapshot_id  BIGINT NOT NULL,
	commit_seq   BIGINT NOT NULL,
	timestamp_ms BIGINT NOT NULL,
	acked_at_ms  BIGINT NOT NULL,
	owner        TEXT   NOT NULL DEFAULT '',
	acked        INTEGER NOT NULL DEFAULT 1,
	protected    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (table_name, ref, consumer)
)`

// keyedTable is the name the table is rebuilt under while it gains the
// ref in its key.
const keyedTable = "sluice_consumer_progress_keyed"

// migrate creates the progress table, or brings one of an earlier layout
// up to this one: each column a later version added is added, and a table
// keyed by (table, consumer) alone is rebuilt keyed by (table, ref,
// consumer), every old record becoming the main branch's (ref "").
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sluice_consumer_progress `+
		progressColumns); err != nil {
		return err
	}
	for _, c := range []struct{ name, def, since string }{
		{"owner", "TEXT NOT NULL DEFAULT ''", "owners were kept"},
		{"acked", "INTEGER NOT NULL DEFAULT 1", "claims were kept"},
		{"protected", "INTEGER NOT NULL DEFAULT 0", "consumers were protected"},
	} {
		// Stores made before <since> lack the column.
		if _, err := s.db.ExecContext(ctx, `SELECT `+c.name+` FROM sluice_consumer_progress WHERE 1 = 0`); err == nil {
			continue
		}
		if _, err := s.db.ExecContext(ctx,
			`ALTER TABLE sluice_consumer_progress ADD COLUMN `+c.name+` `+c.def); err != nil {
			return fmt.Errorf("add the %s column (to a store made before %s): %w", c.name, c.since, err)
		}
	}
	has, err := s.hasRef(ctx, s.db)
	if err != nil || has {
		return err
	}
	if err := s.keyByRef(ctx); err != nil {
		// Another server migrating the same store at once may have won.
		if has, herr := s.hasRef(ctx, s.db); herr == nil && has {
			return nil
		}
		return fmt.Errorf("key the progress by ref (a store made before refs were kept): %w", err)
	}
	return nil
}

// keyByRef rebuilds the progress table keyed by (table, ref, consumer),
// in one transaction: a copy under keyedTable with every record on the
// main branch, the old table dropped, the copy renamed. The transaction
// takes the table's write lock before it looks again for the ref column,
// so that two servers opening the store at once migrate it once.
func (s *Store) keyByRef(ctx context.Context) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	lock := `CREATE TABLE ` + keyedTable + ` ` + progressColumns // SQLite: a write takes the lock
	if s.dialect == DialectPostgres {
		lock = `LOCK TABLE sluice_consumer_progress IN ACCESS EXCLUSIVE MODE`
	}
	if _, err := tx.ExecContext(ctx, lock); err != nil {
		return err
	}
	has, err := s.hasRef(ctx, tx)
	if err != nil {
		return err
	}
	if has {
		return tx.Rollback() // migrated meanwhile
	}
	stmts := []string{
		`INSERT INTO ` + keyedTable + ` (table_name, ref, consumer, snapshot_id, commit_seq, timestamp_ms,
			acked_at_ms, owner, acked, protected)
			SELECT table_name, '', consumer, snapshot_id, commit_seq, timestamp_ms, acked_at_ms, owner, acked,
			protected FROM sluice_consumer_progress`,
		`DROP TABLE sluice_consumer_progress`,
		`ALTER TABLE ` + keyedTable + ` RENAME TO sluice_consumer_progress`,
	}
	if s.dialect == DialectPostgres {
		stmts = append([]string{`CREATE TABLE ` + keyedTable + ` ` + progressColumns}, stmts...)
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// querier is a database or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// hasRef reports whether the progress table has the ref column, without
// a failing statement (which would abort a PostgreSQL transaction).
func (s *Store) hasRef(ctx context.Context, q querier) (bool, error) {
	query := `SELECT COUNT(*) FROM pragma_table_info('sluice_consumer_progress') WHERE name = 'ref'`
	if s.dialect == DialectPostgres {
		query = `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema()
			AND table_name = 'sluice_consumer_progress' AND column_name = 'ref'`
	}
	var n int
	if err := q.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// ignoreDone drops the error of rolling back a transaction already done.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
