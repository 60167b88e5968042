// Package progress stores the durable progress of Sluice's consumers: for
// each table and consumer id, the last snapshot the consumer acknowledged
// as processed. A follow stream that names a consumer resumes right after
// it.
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
