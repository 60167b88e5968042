// Package storageerr holds the sentinel errors of the storage layer
// (package storage), in a package of their own so that the layers above
// the table formats (the format seam, the engine) classify storage
// failures without depending on the storage clients.
package storageerr
