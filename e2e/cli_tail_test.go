package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

// commitUpdate sets the status of an order in the demo table (an equality
// delete and the new row in one commit: an update pair) and returns the
// new snapshot.
func commitUpdate(t *testing.T, ctx context.Context, wh string, orderID int64, status string) int64 {
	t.Helper()
	cat, err := tablewrite.OpenWarehouse(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tablewrite.LiveRows(ctx, tbl, "order_id", []int64{orderID})
	if err != nil || len(rows) != 1 {
		t.Fatalf("order %d: %v %v", orderID, rows, err)
	}
	row := rows[0]
	row["status"] = status
	tbl, err = tablewrite.EqualityDelete(ctx, tbl, "order_id", []tablewrite.Row{{"order_id": orderID}}, []tablewrite.Row{row})
	if err != nil {
		t.Fatal(err)
	}
	return tbl.CurrentSnapshot().SnapshotID
}

// TestCLITail follows the demo table with `sluice tail` while a commit
// lands, prints the update as one zipped line, stops on SIGINT with exit
// status 0; colors under a pseudo-terminal (script(1)) unless NO_COLOR.
func TestCLITail(t *testing.T) {
	srv, wh := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	seq, err := c.CommitSeq(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}
	start := strconv.FormatInt(*seq.Snapshot, 10)

	t.Run("a commit while it runs", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, sluiceBin, "tail", demo.Table, "--from", start, "--no-color")
		cmd.Env = cliEnv("SLUICE_URI=" + srv.URI())
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		snap := commitUpdate(t, ctx, wh, 1003, "shipped")
		want := []string{
			fmt.Sprintf("@ snapshot %d  ", snap),
			`~ update  order_id=1003 customer="Mia Koskinen" country=FI amount=310.25 status=placed→shipped created_at=2026-11-30T08:04:05Z`,
		}
		var got []string
		for i, w := range want {
			select {
			case l, ok := <-lines:
				if !ok || !strings.HasPrefix(l, w) {
					t.Fatalf("line %d: %q (open %v), want %q; stderr %s", i, l, ok, w, stderr.String())
				}
				got = append(got, l)
			case <-time.After(30 * time.Second):
				t.Fatalf("no line %d (%q) 30s after the commit; stderr %s", i, w, stderr.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("tail after SIGINT: %v; stderr %s", err, stderr.String())
		}
		// README.md's sample is this output, but for the snapshot's id
		// and time.
		sample := strings.Split(strings.TrimSuffix(readmeCLI(t, "text")[0], "\n"), "\n")
		norm := regexp.MustCompile(`^@ snapshot \d+  \S+  commit_seq \d+$`)
		if len(sample) != 3 || sample[0] != "$ sluice tail "+demo.Table || !norm.MatchString(sample[1]) ||
			!norm.MatchString(got[0]) || sample[2] != got[1] {
			t.Fatalf("README.md's tail sample:\n%s\nsluice tail printed:\n%s", strings.Join(sample, "\n"), strings.Join(got, "\n"))
		}
		// The flat layout's changes print the same.
		renderable := mustCLI(t, ctx, srv.URI(), "tail", demo.Table, "--from", start, "--no-follow")
		flat := mustCLI(t, ctx, srv.URI(), "tail", demo.Table, "--from", start, "--no-follow", "--layout", "flat")
		if !strings.Contains(renderable, want[1]) || flat != renderable {
			t.Fatalf("tail --layout flat:\n%s\nthe renderable rows:\n%s", flat, renderable)
		}
	})

	t.Run("colors under a terminal", func(t *testing.T) {
		script, err := exec.LookPath("script")
		if err != nil {
			t.Fatal("the tail test runs sluice under a pseudo-terminal with script(1), from util-linux (Debian: bsdutils): not found")
		}
		line := fmt.Sprintf("%s tail %s --from %s --no-follow", sluiceBin, demo.Table, start)
		tty := func(env ...string) string {
			cmd := exec.CommandContext(ctx, script, "-qfec", line, "/dev/null")
			cmd.Env = cliEnv(append(env, "SLUICE_URI="+srv.URI(), "TERM=xterm")...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("script -c %q: %v\n%s", line, err, out)
			}
			return strings.ReplaceAll(string(out), "\r\n", "\n")
		}
		colored := tty()
		if !strings.Contains(colored, "\x1b[31;9mplaced\x1b[0m→\x1b[1;32;48;5;22mshipped\x1b[0m") {
			t.Fatalf("no highlighted change under a terminal:\n%q", colored)
		}
		plain := tty("NO_COLOR=1")
		if strings.Contains(plain, "\x1b[") || !strings.Contains(plain, "status=placed→shipped") {
			t.Fatalf("NO_COLOR under a terminal:\n%q", plain)
		}
		// The terminal gets the start line on stderr too.
		if !strings.Contains(plain, "following "+demo.Table) {
			t.Fatalf("no start line on the terminal:\n%s", plain)
		}
	})

	t.Run("consumer, ack, resume", func(t *testing.T) {
		out := mustCLI(t, ctx, srv.URI(), "tail", demo.Table, "--consumer", "cli-1", "--ack", "--start", "latest-full", "--no-follow")
		cur, err := c.CommitSeq(ctx, demo.Table)
		if err != nil {
			t.Fatal(err)
		}
		// The demo's ten orders but 1002, cancelled.
		if !strings.Contains(out, "(full state)") || strings.Count(out, "+ insert") != 9 || strings.Contains(out, "order_id=1002 ") {
			t.Fatalf("the full state of 9 orders:\n%s", out)
		}
		p, err := c.ConsumerProgress(ctx, "cli-1", demo.Table)
		if err != nil || p.Snapshot != *cur.Snapshot {
			t.Fatalf("progress %+v (%v), want snapshot %d", p, err, *cur.Snapshot)
		}
		snap := commitUpdate(t, ctx, wh, 1004, "shipped")
		out = mustCLI(t, ctx, srv.URI(), "tail", demo.Table, "--consumer", "cli-1", "--ack", "--no-follow")
		want := fmt.Sprintf("@ snapshot %d  ", snap)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], want) ||
			!strings.HasPrefix(lines[1], "~ update  order_id=1004 ") {
			t.Fatalf("the resumed consumer:\n%s\nwant only snapshot %d's update", out, snap)
		}
		if p, err := c.ConsumerProgress(ctx, "cli-1", demo.Table); err != nil || p.Snapshot != snap {
			t.Fatalf("progress %+v (%v), want snapshot %d", p, err, snap)
		}
		// Nothing new: nothing printed.
		if out := mustCLI(t, ctx, srv.URI(), "tail", demo.Table, "--consumer", "cli-1", "--no-follow"); out != "" {
			t.Fatalf("caught up, yet:\n%s", out)
		}
	})
}

// readmeCLI returns the fenced blocks of README.md's subsection on the
// CLI whose info string is info.
func readmeCLI(t *testing.T, info string) []string {
	t.Helper()
	doc := docmd.Read(t, "../README.md")
	const head = "### The terminal: `sluice`\n"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("README.md has no %q", head)
	}
	sec := doc[i+len(head):]
	if j := strings.Index(sec, "\n#"); j >= 0 {
		sec = sec[:j]
	}
	var blocks []string
	for {
		k := strings.Index(sec, "```"+info+"\n")
		if k < 0 {
			break
		}
		sec = sec[k+len(info)+4:]
		end := strings.Index(sec, "```\n")
		if end < 0 {
			t.Fatalf("README.md: a ```%s block of the CLI's subsection is not closed", info)
		}
		blocks = append(blocks, sec[:end])
		sec = sec[end+4:]
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md's CLI subsection has no ```%s block", info)
	}
	return blocks
}

// TestCLIReadme runs the shell block of README.md's CLI subsection, as
// is, against the demo table: every command succeeds, and the files it
// writes hold the Go client's rows.
func TestCLIReadme(t *testing.T) {
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	blocks := readmeCLI(t, "sh")
	if len(blocks) != 1 {
		t.Fatalf("%d sh blocks, want 1", len(blocks))
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", blocks[0])
	cmd.Dir = dir
	cmd.Env = cliEnv("SLUICE_URI="+srv.URI(), "PATH="+filepath.Dir(sluiceBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands: %v\n%s", err, out)
	}
	for _, want := range []string{"demo.orders  iceberg v2", "SNAPSHOT", "update_after", "equality-delete", "(full state)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands printed no %q:\n%s", want, out)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := dialGo(t, ctx, srv.URI())
	flat, _ := clientFeed(t, ctx, c, mem, sluice.ChangeRequest{Table: demo.Table, Layout: sluice.LayoutFlat})
	defer flat.Release()
	got := readBack(t, mem, "parquet", filepath.Join(dir, "changes.parquet"))
	defer got.Release()
	if !sameColumns(got, flat) {
		t.Fatalf("changes.parquet:\n%v\nthe Go client's flat feed:\n%v", got, flat)
	}
	net, _ := clientFeed(t, ctx, c, mem, sluice.ChangeRequest{Table: demo.Table, NetChanges: true})
	defer net.Release()
	b, err := os.ReadFile(filepath.Join(dir, "net.csv"))
	if err != nil {
		t.Fatal(err)
	}
	checkCSV(t, string(b), net)
}
