// Package rowkey encodes the values of Arrow rows into comparable bytes:
// equal values encode equal whatever their physical Arrow type, so that
// rows read before and after a type promotion compare equal. The change
// engine keys rows by it (pairing, net changes, equality deletes), and the
// table formats key the rows of their equality delete files the same way.
package rowkey
