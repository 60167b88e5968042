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
//
// With a Spark configuration (ServeSpark, SparkConfig), the tables it
// names are routed to their Spark Connect servers: on its first load each
// gets a verdict from spark.Session.Detect (cached while flightd runs,
// forgotten after a failed read through Spark), and is returned as a
// feed.Routed table whose windows a feed.WindowBackend reads through
// Spark, or natively when the verdict or the request says so. A routed
// name Sluice does not find is served by Spark alone (sparkOnly), its
// lineage read from Spark on each load. Spark's
// errors keep the sentinels of package spark, each declared with its class
// of failure (internal/lib/errclass), which the server maps to a gRPC
// code; the router decides by class whether a table falls back to native.
package registry
