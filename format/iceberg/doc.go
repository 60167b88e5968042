// Package iceberg is Sluice's Iceberg table format: it translates between
// iceberg-go's model and Sluice's own vocabulary (package lake), so that
// nothing above the format seam speaks iceberg-go.
package iceberg
