package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// sameDeltaFixtures checks that every fixture of the local copy local,
// those without peer queries too (checkpoints of every kind, sidecars,
// column mapping), reads the same through client (flightd serving the
// copy uploaded to object storage, from) as from a flightd serving local:
// its versions and its whole feed. Commit times may differ where a commit
// is dated by its file (the object's upload time).
func sameDeltaFixtures(t *testing.T, ctx context.Context, client *sluice.Client, local, from string) {
	t.Helper()
	localSrv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", local, "--max-batch-rows", "5")
	localClient := dialGo(t, ctx, localSrv.URI())
	dirs := deltaTableDirs(t, local)
	if len(dirs) < 15 {
		t.Fatalf("%d fixture tables, want all of testdata/delta's", len(dirs))
	}
	for folder := range dirs {
		name := "delta." + folder
		t.Run("same as local/"+folder, func(t *testing.T) {
			remoteSnaps, err := client.Snapshots(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			localSnaps, err := localClient.Snapshots(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(remoteSnaps) != len(localSnaps) {
				t.Fatalf("%d versions from %s, %d from the local copy", len(remoteSnaps), from, len(localSnaps))
			}
			for i := range remoteSnaps {
				a, b := remoteSnaps[i], localSnaps[i]
				if a.ID != b.ID || a.CommitSeq != b.CommitSeq || a.Operation != b.Operation {
					t.Errorf("version %d from %s %+v, from the local copy %+v", i, from, a, b)
				}
			}
			remoteRows, remoteErr := deltaRowsGo(ctx, client, sluice.ChangeRequest{Table: name})
			localRows, localErr := deltaRowsGo(ctx, localClient, sluice.ChangeRequest{Table: name})
			if sluice.Code(remoteErr) != sluice.Code(localErr) {
				t.Fatalf("from %s: %v; from the local copy: %v", from, remoteErr, localErr)
			}
			keys := func(rows []map[string]string) []string {
				var out []string
				for _, r := range rows {
					delete(r, "_commit_timestamp")
					cols := slices.Sorted(maps.Keys(r))
					out = append(out, deltafx.Key(r, cols))
				}
				slices.Sort(out)
				return out
			}
			if a, b := keys(remoteRows), keys(localRows); !slices.Equal(a, b) {
				t.Errorf("the feed from %s (%d rows) differs from the local copy's (%d rows)", from, len(a), len(b))
			}
			if len(localRows) == 0 && localErr == nil {
				t.Logf("%s: an empty feed", name)
			}
		})
	}
}

// uploadFolder calls put with the slash-separated path and the content of
// every file under local.
func uploadFolder(t *testing.T, local string, put func(rel string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		put(filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cloudDeltaConfig is a flightd configuration with the storage properties
// props, serving the Delta tables under root and the table delta.named at
// the URL named (the name cloud.named).
func cloudDeltaConfig(t *testing.T, props map[string]string, root, named string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("catalog:\n  properties:\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "    %s: %q\n", k, props[k])
	}
	fmt.Fprintf(&b, "delta:\n  root: %q\n  tables:\n    cloud.named: %q\n", root, named)
	return writeFile(t, t.TempDir(), "flightd.yaml", b.String())
}

// TestDeltaFixturesGCSAndAzure serves testdata/delta's written fixtures
// from fake-gcs-server and from Azurite, through delta.root (the listing
// of the tables) and delta.tables, and checks every window against the
// fixtures' expected results and every feed against the same table
// served from a local folder.
func TestDeltaFixturesGCSAndAzure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	local := copyDeltaFixtures(t)
	dirs := deltaTableDirs(t, local)
	named := slices.Sorted(maps.Keys(dirs))[0]

	serve := func(t *testing.T, cfg, from string) {
		srv := startFlightd(t, "--warehouse", t.TempDir(), "--config", cfg, "--max-batch-rows", "5")
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			client.Close()
			mem.AssertSize(t, 0)
		}()
		checkDeltaFixtureQueries(t, ctx, client, local)
		// delta.tables: one fixture again, as cloud.named.
		a, aErr := deltaRowsGo(ctx, client, sluice.ChangeRequest{Table: "cloud.named"})
		b, bErr := deltaRowsGo(ctx, client, sluice.ChangeRequest{Table: "delta." + named})
		if aErr != nil || bErr != nil || len(a) != len(b) {
			t.Errorf("cloud.named (%d rows, %v) is not delta.%s (%d rows, %v)", len(a), aErr, named, len(b), bErr)
		}
		sameDeltaFixtures(t, ctx, client, local, from)
	}

	t.Run("gcs", func(t *testing.T) {
		g := testsvc.FakeGCS(t)
		bucket := testsvc.UniqueName("fixtures")
		g.CreateBucket(t, bucket)
		uploadFolder(t, local, func(rel string, data []byte) { g.PutObject(t, bucket, "fixtures/"+rel, data) })
		root := "gs://" + bucket + "/fixtures"
		serve(t, cloudDeltaConfig(t, g.Props(), root, root+"/"+named), "GCS")
	})
	t.Run("azure", func(t *testing.T) {
		a := testsvc.Azurite(t)
		container := testsvc.UniqueName("fixtures")
		a.CreateContainer(t, container)
		uploadFolder(t, local, func(rel string, data []byte) { a.PutBlob(t, container, "fixtures/"+rel, data) })
		serve(t, cloudDeltaConfig(t, a.Props(""), a.URL(container, "fixtures"), a.URL(container, "fixtures/"+named)),
			"Azure")
	})
}
