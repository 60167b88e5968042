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
// Tables are named "namespace.table"; a namespace may itself contain dots
// ("a.b.table" is table "table" in namespace "a.b").
package catalog
