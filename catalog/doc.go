// Package catalog opens the catalogs that hold a warehouse's tables and
// loads tables from them by name.
//
// It wraps iceberg-go's catalogs: the embedded default is a local warehouse
// directory with iceberg-go's SQL catalog on SQLite (pure Go, no cgo), so a
// catalog file written by pyiceberg's SqlCatalog or by iceberg-go is served
// as it is; REST and Hadoop catalogs are selected by configuration. While
// its SQLite file is gone, calls fail with ErrUnavailable; a file replaced
// by another is opened anew.
//
// A server calls Preflight before Open: it refuses, naming what it found, a
// configuration that would serve nothing or the wrong tables in silence (a
// warehouse that does not exist, an empty catalog about to be created beside
// another catalog's files, tables written under another catalog name). For
// a table that is not found, Suggest names the nearest tables a caller may
// read, and DidYouMean adds them to the error.
//
// Tables are named "namespace.table"; a namespace may itself contain dots
// ("a.b.table" is table "table" in namespace "a.b").
package catalog
