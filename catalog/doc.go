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
// A REST catalog's client properties (credential, token, scope,
// oauth2-server-uri, SigV4, header.*, the warehouse, rest.tls.ca-file) are
// turned into iceberg-go REST options, so that its very first request, GET
// /v1/config, is authenticated and names the warehouse; a failed start is
// ErrUnavailable when retrying may help and ErrInvalidConfig when it
// cannot. Property values may be references (${env:NAME},
// ${file:PATH}) resolved at Open; CheckProperties names the properties
// iceberg-go would ignore, and RedactProperties hides secrets from logs.
//
// Tables are named "namespace.table"; a namespace may itself contain dots
// ("a.b.table" is table "table" in namespace "a.b").
package catalog
