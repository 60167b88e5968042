package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// A Go subscription with Reconnect follows a table across a flightd killed
// with SIGKILL and restarted on its address, and across a schema change
// (which ends an Arrow stream): every row comes exactly once, those after
// the schema change in the new schema.
func TestGoSubscriptionReconnects(t *testing.T) {
	fix := writeEvents(t, 3, 7)
	flags := []string{"--warehouse", fix.Warehouse, "--poll-interval", "50ms", "--heartbeat-interval", "300ms"}
	srv := startFlightd(t, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: fix.Table, Start: sluice.StartLatestFull,
		Reconnect: true, MaxBackoff: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()

	var ids []int64
	tags := map[int64]string{} // the tag of each row that has the column
	read := func(want int) {
		t.Helper()
		for len(ids) < want {
			if !sub.Next() {
				t.Fatalf("the subscription ended after %d of %d rows: %v", len(ids), want, sub.Err())
			}
			if sub.Redelivered() {
				t.Fatalf("batch %+v redelivered: the stream broke off between snapshots", sub.Batch().Meta)
			}
			after := sub.Batch().Record.Column(2).(*array.Struct)
			st := after.DataType().(*arrow.StructType)
			idx, _ := st.FieldIdx("id")
			col := after.Field(idx).(*array.Int64)
			tagIdx, hasTag := st.FieldIdx("tag")
			for i := range after.Len() {
				ids = append(ids, col.Value(i))
				if hasTag {
					tags[col.Value(i)] = after.Field(tagIdx).(*array.String).Value(i)
				}
			}
		}
	}
	total := 0
	for _, s := range fix.Snapshots {
		total += len(s.Rows)
	}
	read(total) // the full state

	cat, err := tablewrite.OpenWarehouse(ctx, fix.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, fix.Table)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(total + 1)
	commit := func(n int, tag string) {
		t.Helper()
		var rows []tablewrite.Row
		for range n {
			row := tablewrite.Row{"id": next, "amount": 1.5, "flag": true, "qty": int32(1),
				"created": "2026-12-01T00:00:00Z"}
			if tag != "" {
				row["tag"] = tag
			}
			rows = append(rows, row)
			next++
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
	}

	// flightd dies; a commit lands while it is down; it comes back.
	_ = killFlightd(srv)
	commit(5, "")
	startFlightd(t, append(flags, "--listen", srv.Addr)...) // stopped when the test ends
	read(total + 5)
	if sub.Reconnects() == 0 {
		t.Fatal("no reconnect after flightd was killed")
	}
	afterKill := sub.Reconnects()

	// The schema changes: a new column, then rows that fill it.
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"tag"}, iceberg.PrimitiveTypes.String, "", false, nil).
		Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	commit(4, "red")
	read(total + 9)
	if sub.Reconnects() != afterKill+1 {
		t.Fatalf("%d reconnects after the schema change, want %d", sub.Reconnects(), afterKill+1)
	}
	if _, ok := sub.Schema().Field(2).Type.(*arrow.StructType).FieldIdx("tag"); !ok {
		t.Fatalf("the stream's schema after the change lacks the new column: %s", sub.Schema())
	}

	want := make([]int64, 0, total+9)
	for i := range int64(total + 9) {
		want = append(want, i+1)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want 1..%d each once", ids, total+9)
	}
	for id := int64(total + 6); id <= int64(total+9); id++ {
		if tags[id] != "red" {
			t.Fatalf("row %d has tag %q, want red", id, tags[id])
		}
	}
	t.Logf("%d rows, %d reconnects", len(ids), sub.Reconnects())
}

// followerOutput collects the row ids a follower process prints: the
// JSON lines of `sluice tail -o jsonl` (the after-image's id) or of
// e2e/python/basic_follower.py ("ids").
type followerOutput struct {
	mu     sync.Mutex // guards ids
	ids    map[int64]bool
	out    syncBuffer    // stdout and stderr, for failure messages
	exited chan struct{} // closed when the process exited, err then set
	err    error
}

func (f *followerOutput) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = f.out.Write(append(slices.Clone(line), '\n'))
		var v struct {
			IDs   []int64 `json:"ids"`
			After *struct {
				ID int64 `json:"id"`
			} `json:"after"`
		}
		if json.Unmarshal(line, &v) != nil {
			continue
		}
		f.mu.Lock()
		if f.ids == nil {
			f.ids = map[int64]bool{}
		}
		for _, id := range v.IDs {
			f.ids[id] = true
		}
		if v.After != nil {
			f.ids[v.After.ID] = true
		}
		f.mu.Unlock()
	}
}

// has reports whether the follower printed every id in 1..n and the extra
// ones.
func (f *followerOutput) has(n int64, extra ...int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := int64(1); id <= n; id++ {
		if !f.ids[id] {
			return false
		}
	}
	for _, id := range extra {
		if !f.ids[id] {
			return false
		}
	}
	return true
}

// startFollower starts a follower process, its output collected; the
// test's end kills it.
func startFollower(t *testing.T, cmd *exec.Cmd) *followerOutput {
	t.Helper()
	f := &followerOutput{exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &f.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		f.read(stdout)
		f.err = cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-f.exited
	})
	return f
}

// Followers logged in with basic credentials carry on across a restart of
// a flightd that runs without --auth-secret-file, whose issued tokens die
// with the process (the new one refuses them: "unknown bearer token"): a
// Go Subscription, `sluice tail --user` and a Python subscription each
// handshake again, receive the row committed while flightd was down, and
// acknowledge its snapshot on the new process (the consumers' progress on
// the server advances).
func TestBasicAuthFollowersSurviveARestart(t *testing.T) {
	py := python(t)
	fix := writeEvents(t, 2, 11)
	dir := t.TempDir()
	const password = "correct horse battery staple"
	users := writeFile(t, dir, "users.yaml", "users:\n"+flightdTool(t, password, "hash-password", "--user", "alice")+"\n")
	rules := writeFile(t, dir, "rules.yaml", "auth:"+authRules)
	flags := []string{"--warehouse", fix.Warehouse, "--config", rules, "--auth-mode", "basic",
		"--auth-users-file", users, "--poll-interval", "50ms", "--heartbeat-interval", "300ms"}
	srv := startFlightd(t, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	total := int64(0)
	for _, s := range fix.Snapshots {
		total += int64(len(s.Rows))
	}
	last := fix.Snapshots[len(fix.Snapshots)-1].Snapshot

	// The three followers, each a durable consumer that acks every
	// snapshot, from the full state on.
	c := dialGo(t, ctx, srv.URI(), sluice.WithBasicAuth("alice", password))
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: eventsTable, Consumer: "go-follower",
		Start: sluice.StartLatestFull, Columns: []string{"id"}, Reconnect: true, MaxBackoff: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	tail := exec.CommandContext(ctx, sluiceBin, "tail", eventsTable, "--user", "alice", "--start", "latest-full",
		"--consumer", "cli-follower", "--ack", "--columns", "id", "-o", "jsonl")
	tail.Env = cliEnv("SLUICE_URI="+srv.URI(), "SLUICE_PASSWORD="+password)
	cli := startFollower(t, tail)
	pyCmd := exec.CommandContext(ctx, py, filepath.Join("python", "basic_follower.py"), srv.URI(), eventsTable,
		"py-follower", "alice")
	pyCmd.Env = append(os.Environ(), "SLUICE_PASSWORD="+password)
	pyf := startFollower(t, pyCmd)

	goIDs := &followerOutput{ids: map[int64]bool{}}
	readGo := func(extra ...int64) {
		t.Helper()
		for !goIDs.has(total, extra...) {
			if !sub.Next() {
				t.Fatalf("the Go subscription ended: %v", sub.Err())
			}
			b := sub.Batch()
			col := b.Record.Column(2).(*array.Struct).Field(0).(*array.Int64)
			for i := range col.Len() {
				goIDs.ids[col.Value(i)] = true
			}
			if b.Meta.SnapshotComplete {
				if _, err := sub.Ack(ctx); err != nil {
					t.Fatalf("the Go subscription's ack of snapshot %d: %v", b.Meta.Snapshot, err)
				}
			}
		}
	}
	// waitFor waits for the processes to print the ids and for the
	// consumers' progress to reach snapshot.
	waitFor := func(what string, consumers []string, snapshot int64, extra ...int64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var lagging []string
			for name, f := range map[string]*followerOutput{"sluice tail": cli, "python": pyf} {
				if !f.has(total, extra...) {
					lagging = append(lagging, name+" has not printed the rows")
				}
			}
			for _, consumer := range consumers {
				p, err := c.ConsumerProgress(ctx, consumer, eventsTable)
				if err != nil || p.Snapshot != snapshot {
					lagging = append(lagging, fmt.Sprintf("%s's progress is %d (%v), not %d", consumer, p.Snapshot, err, snapshot))
				}
			}
			if len(lagging) == 0 {
				return
			}
			select {
			case <-cli.exited:
				t.Fatalf("%s: sluice tail exited (%v):\n%s", what, cli.err, cli.out.String())
			case <-pyf.exited:
				t.Fatalf("%s: the Python follower exited (%v):\n%s", what, pyf.err, pyf.out.String())
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 2 minutes, %s\nsluice tail:\n%s\npython:\n%s\nflightd:\n%s", what,
					strings.Join(lagging, "; "), cli.out.String(), pyf.out.String(), srv.logs())
			}
		}
	}
	all := []string{"go-follower", "cli-follower", "py-follower"}
	readGo()
	waitFor("the full state", all, last)

	// flightd restarts (with a new random secret); a row lands while it is
	// down.
	srv.stop(t)
	cat, err := tablewrite.OpenWarehouse(ctx, fix.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, fix.Table)
	if err != nil {
		t.Fatal(err)
	}
	newID := total + 1
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": newID, "amount": 1.5, "flag": true,
		"qty": int32(1), "created": "2026-12-01T00:00:00Z"}}); err != nil {
		t.Fatal(err)
	}
	srv = startFlightd(t, append(flags, "--listen", srv.Addr)...)
	newSnapshot := tbl.CurrentSnapshot().SnapshotID
	waitFor("after the restart", all[1:], newSnapshot, newID)
	readGo(newID)
	waitFor("after the restart", all, newSnapshot, newID)
	if sub.Reconnects() == 0 {
		t.Fatal("the Go subscription did not reconnect")
	}
}
