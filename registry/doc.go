// Package registry is the set of tables flightd serves, as the change
// engine reads them: the Iceberg catalog's tables and the Delta tables
// (catalog.DeltaTables), each Delta table through one long-lived source.
//
// Tables refuses a Delta table whose name the Iceberg catalog also serves
// (looked up again every nameCheckInterval), names the nearest tables a
// caller may read when one is not found (catalog.Nearest, filtered by the
// caller's read rights), and tells the engine of a followed table's
// commits from file notifications (FileNotifier) where the files a commit
// changes are local.
package registry
