// Package suggest finds the names nearest to a mistyped one, for the
// "did you mean" of the command lines of sluice and flightd: a command, or
// a flag that a [flag.FlagSet] does not define.
//
// The catalog's table names have their own matcher (catalog.Nearest),
// which also weighs a table found in another namespace.
package suggest
