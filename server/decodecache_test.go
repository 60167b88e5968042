package server_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/server"
)

// withCache turns the decode cache on, with the TTL given, and serves the
// metrics; it returns a scrape of one metric's value.
func withCache(ttl time.Duration) (func(*server.Options), func(t *testing.T, name string) float64) {
	m := server.NewMetrics(nil)
	opt := func(o *server.Options) {
		o.DecodeCacheBytes, o.DecodeCacheTTL, o.Metrics = server.DefaultDecodeCacheBytes, ttl, m
	}
	scrape := func(t *testing.T, name string) float64 {
		t.Helper()
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		match := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(rec.Body.String())
		if match == nil {
			t.Fatalf("no %s in the metrics", name)
		}
		v, err := strconv.ParseFloat(match[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return opt, scrape
}

// Follow streams of one table read each new commit through one fill of
// the decode cache, and each gets the commit's rows with its own
// app_metadata.
func TestDecodeCacheSharedByFollowers(t *testing.T) {
	checkLeaks(t)
	opt, scrape := withCache(time.Minute)
	f := startWith(t, 1, 4, 8, nil, opt)
	const streams, commits = 8, 3
	var ls []*live
	for range streams {
		l := f.open(t, `{"table": "shop.orders", "follow": true, "start": "latest", "compression": "zstd"}`)
		l.heartbeat(t)
		ls = append(ls, l)
	}
	for c := range commits {
		first := 4 + c*10
		f.commit(t, first, 10, 8)
		for i, l := range ls {
			ids, snaps, metas := l.changes(t, 10)
			sameIDs(t, ids, seq(int64(first+1), int64(first+10)))
			if len(snaps) != 1 || snaps[0] != f.snapshots[len(f.snapshots)-1] {
				t.Fatalf("stream %d completed snapshots %v, want the commit's %d", i, snaps, f.snapshots[len(f.snapshots)-1])
			}
			last := metas[len(metas)-1]
			if last.FullState || last.CommitSeq != int64(c+2) || last.TimestampMs == 0 {
				t.Fatalf("stream %d: app_metadata %+v", i, last)
			}
		}
	}
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != commits {
		t.Fatalf("%v fills for %d commits", m, commits)
	}
	if h := scrape(t, "sluice_decode_cache_hits_total"); h != commits*(streams-1) {
		t.Fatalf("%v hits, want %d", h, commits*(streams-1))
	}
	if b := scrape(t, "sluice_decode_cache_bytes"); b <= 0 {
		t.Fatalf("the cache holds %v bytes", b)
	}
}

// Followers that asked for gRPC's gzip compression (which the server then
// uses for its replies) read the cache's batches along with followers
// that did not: the batches are marshaled once for the streams that
// compress nothing, and a compressing stream marshals its own, so that no
// stream sends bytes compressed for another (a client refuses a message
// flagged compressed on a stream without compression).
func TestDecodeCacheCompressedAndPlainStreams(t *testing.T) {
	checkLeaks(t)
	opt, scrape := withCache(time.Minute)
	f := startWith(t, 1, 4, 8, nil, opt)
	const commits = 4
	var ls []*live
	for i := range 6 {
		var opts []grpc.CallOption
		if i%2 == 0 {
			opts = append(opts, grpc.UseCompressor(gzip.Name))
		}
		l := f.open(t, `{"table": "shop.orders", "follow": true, "start": "latest"}`, opts...)
		l.heartbeat(t)
		ls = append(ls, l)
	}
	for c := range commits {
		first := 4 + c*10
		f.commit(t, first, 10, 8)
		for _, l := range ls {
			ids, _, _ := l.changes(t, 10)
			sameIDs(t, ids, seq(int64(first+1), int64(first+10)))
		}
	}
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != commits {
		t.Fatalf("%v fills for %d commits", m, commits)
	}
}

// Full states (start latest-full) and windows are shared too, each per
// compression; what a stream receives from the cache is what it would
// read without one.
func TestDecodeCacheWindowsAndStates(t *testing.T) {
	opt, scrape := withCache(time.Minute)
	f := startWith(t, 3, 50, 100, nil, opt)
	plain := start(t, 3, 50, 100)
	window := fmt.Sprintf(`{"table": "shop.orders", "to_snapshot": "%d", "columns": ["id", "payload"]}`, f.snapshots[2])
	for _, tkt := range []string{window, strings.Replace(window, `{`, `{"compression": "lz4", `, 1)} {
		var want received
		for i := range 3 {
			got, err := f.doGet(t, context.Background(), []byte(tkt))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				want = got
				continue
			}
			if fmt.Sprint(got.metas) != fmt.Sprint(want.metas) || got.rows != 150 {
				t.Fatalf("read %d: %+v, want %+v", i, got.metas, want.metas)
			}
		}
		// The same window without the cache: the same metadata (the
		// snapshot ids differ between the two tables: compare the rest).
		ref, err := plain.doGet(t, context.Background(), []byte(strings.Replace(tkt,
			fmt.Sprint(f.snapshots[2]), fmt.Sprint(plain.snapshots[2]), 1)))
		if err != nil {
			t.Fatal(err)
		}
		if len(ref.metas) != len(want.metas) || ref.rows != want.rows {
			t.Fatalf("without the cache %d batches of %d rows, with it %d of %d", len(ref.metas), ref.rows,
				len(want.metas), want.rows)
		}
		for i := range ref.metas {
			if ref.metas[i].Rows != want.metas[i].Rows || ref.metas[i].SnapshotComplete != want.metas[i].SnapshotComplete {
				t.Fatalf("batch %d: %+v without the cache, %+v with it", i, ref.metas[i], want.metas[i])
			}
		}
	}
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != 2 {
		t.Fatalf("%v fills for one window read 3 times in 2 compressions, want 2", m)
	}
	// The flat layout of the same window is a read of its own.
	for range 2 {
		fl := f.readFlat(t, []byte(strings.Replace(window, `{`, `{"layout": "flat", `, 1)))
		if len(fl.ids) != 150 || fl.schema.Field(2).Name != "_change_type" {
			t.Fatalf("flat read: %d rows, schema %s", len(fl.ids), fl.schema)
		}
	}
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != 3 {
		t.Fatalf("%v fills after the flat layout's reads, want 3", m)
	}
	for range 3 {
		l := f.open(t, `{"table": "shop.orders", "follow": true}`)
		ids, _, metas := l.changes(t, 150)
		slices.Sort(ids) // a state's rows come in file order
		sameIDs(t, ids, seq(1, 150))
		if !metas[len(metas)-1].FullState {
			t.Fatalf("the full state's batches are not marked: %+v", metas[len(metas)-1])
		}
		// A heartbeat after the state: its read has ended, and with it the
		// fill (a fill every reader leaves before it ends is dropped, and
		// the next stream would fill again).
		l.heartbeat(t)
		l.stop()
	}
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != 4 {
		t.Fatalf("%v fills after 3 streams of one full state, want 4 (3 windows, 1 state)", m)
	}
}

// A principal restricted to some columns never gets another column from
// a window another principal's read put in the cache.
func TestDecodeCacheKeepsGrants(t *testing.T) {
	tokens := withTokens(t, auth.Config{Rules: []auth.Rule{
		{Principals: []string{"alice"}, Tables: []string{"shop.*"}, Columns: map[string][]string{"shop.orders": {"id", "country"}}},
		{Principals: []string{"bob"}, Tables: []string{"shop.*"}},
	}}, "alice", "bob")
	opt, scrape := withCache(time.Minute)
	f := startWith(t, 2, 4, 8, nil, opt, tokens)
	fields := func(who string) string {
		t.Helper()
		stream, err := f.client.DoGet(as(who), &flight.Ticket{Ticket: []byte(`{"table": "shop.orders"}`)})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(memory.NewGoAllocator()))
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var out string
		for rdr.Next() {
			out = fmt.Sprint(rdr.RecordBatch().Schema().Field(2).Type)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := fields("bob"); !strings.Contains(got, "payload") {
		t.Fatalf("bob's after image %s lacks payload", got)
	}
	if got := fields("alice"); strings.Contains(got, "payload") {
		t.Fatalf("alice got the payload column she may not read: %s", got)
	}
	if got := fields("bob"); !strings.Contains(got, "payload") {
		t.Fatalf("bob's after image %s lacks payload", got)
	}
	if m, h := scrape(t, "sluice_decode_cache_misses_total"), scrape(t, "sluice_decode_cache_hits_total"); m != 2 || h != 1 {
		t.Fatalf("%v misses and %v hits, want 2 (bob, alice) and 1 (bob again)", m, h)
	}
}

// A data file deleted after a read is served from the cache within its
// TTL, and fails the first read after the TTL as it would without a cache.
func TestDecodeCacheTTLShowsMissingFile(t *testing.T) {
	const ttl = 300 * time.Millisecond
	opt, scrape := withCache(ttl)
	f := startWith(t, 2, 4, 8, nil, opt)
	tkt := []byte(fmt.Sprintf(`{"table": "shop.orders", "to_snapshot": "%d"}`, f.snapshots[1]))
	if _, err := f.doGet(t, context.Background(), tkt); err != nil {
		t.Fatal(err)
	}
	var removed int
	err := filepath.WalkDir(strings.TrimPrefix(f.tbl.Location(), "file://"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			removed++
			return os.Remove(p)
		}
		return err
	})
	if err != nil || removed == 0 {
		t.Fatalf("removed %d data files: %v", removed, err)
	}
	start := time.Now()
	if _, err := f.doGet(t, context.Background(), tkt); err != nil && time.Since(start) < ttl {
		t.Fatalf("within the TTL: %v", err)
	}
	time.Sleep(ttl)
	_, err = f.doGet(t, context.Background(), tkt)
	checkStatus(t, err, codes.FailedPrecondition, "")
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != 2 {
		t.Fatalf("%v fills, want 2", m)
	}
	_, err = f.doGet(t, context.Background(), tkt)
	checkStatus(t, err, codes.FailedPrecondition, "")
	if m := scrape(t, "sluice_decode_cache_misses_total"); m != 3 {
		t.Fatalf("%v fills, want 3: a failed read is not cached", m)
	}
}
