// Package progress stores the durable progress of Sluice's consumers: for
// each table, ref and consumer id (a [Key]), the last snapshot the
// consumer acknowledged as processed. A follow stream that names a
// consumer resumes right after it. The ref is the branch or tag whose
// lineage the consumer follows, "" for the main branch: the same id on
// main and on a branch are two consumers. A store made before refs were
// kept is rebuilt keyed by ref when opened, its records the main
// branch's.
//
// A [Store] keeps the progress in a SQL database: an embedded SQLite file
// (the default, next to the warehouse) or PostgreSQL. [Open] picks the
// database from a DSN:
//
//	/var/lib/sluice/consumers.db             a SQLite file
//	sqlite:///var/lib/sluice/consumers.db    the same
//	file:///var/lib/sluice/consumers.db      the same
//	postgres://user:pw@host:5432/db          PostgreSQL (also postgresql://)
//
// Every write is committed before it returns, so an acknowledged
// checkpoint survives a crash of the server.
package progress
