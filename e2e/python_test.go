package e2e

import (
	"context"
	"testing"
	"time"
)

// TestPython runs the pyarrow-client tests (e2e/python) against a real
// flightd serving a table that iceberg-go wrote. The pytest suite also
// writes tables with pyiceberg and starts flightd processes of its own.
func TestPython(t *testing.T) {
	python(t)
	fix := writeEvents(t, 6, 42)
	mor := writeMOR(t, fix.Warehouse, 3)
	srv := startFlightd(t, "--warehouse", fix.Warehouse)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pytest(t, ctx, map[string]string{
		"SLUICE_ADDR":        srv.URI(),
		"SLUICE_E2E_FIXTURE": fix.save(t),
		"SLUICE_MOR_FIXTURE": mor,
	}, "--ignore=python/test_auth.py", // run by TestAuth, against its own servers
		"--ignore=python/test_s3_rest.py") // run by TestS3REST, against its S3 and REST catalog
}
