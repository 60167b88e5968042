// Package cli is the `sluice` command: the terminal client of a Sluice
// server, built on the Go client (clients/go). cmd/sluice only wires the
// process to [Main]; everything else, flags, rendering and output formats,
// lives here so that it can be tested without a process.
//
// The subcommands are tables, snapshots, status, changes, tail, explain
// and version; `sluice help` lists them and `sluice <command> --help`
// describes each.
package cli
