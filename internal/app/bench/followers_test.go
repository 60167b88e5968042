package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollowersTiny runs the followers arm on a tiny workload: every run
// has every row for every follower (followRun checks their ids), flightd
// wrote each follower its bytes, the socket floor was measured, and the
// section renders both arms and the verdict.
func TestFollowersTiny(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/sluicefeed/sluice/cmd/flightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flightd: %v\n%s", err, out)
	}
	cfg := Config{Work: filepath.Join(dir, "work"), Flightd: filepath.Join(dir, "flightd"), Runs: 1,
		Followers: FollowersParams{Followers: 3, Commits: 2, Rows: 2000}, Log: testLog{t}}
	rep, err := RunFollowers(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Followers
	if f == nil || len(f.One) != 1 || len(f.Many) != 1 || len(f.Floor) != 1 || f.Batches < 2 {
		t.Fatalf("the followers report %+v; want a run of each arm, a floor and a batch per commit at least", f)
	}
	one, many := f.One[0], f.Many[0]
	// 2 commits of 2000 rows of 3 columns, in the renderable layout: more
	// than 100 KB for each follower.
	if one.Written < 100_000 || one.Writes < 1 || many.Written < 3*one.Written*9/10 || one.PeakMiB <= 0 ||
		many.PeakMiB <= 0 {
		t.Errorf("one follower %+v, three %+v; want three followers' bytes written for three", one, many)
	}
	if f.Floor[0] <= 0 {
		t.Errorf("socket floor %v", f.Floor[0])
	}
	md := rep.FollowersSection()
	for _, s := range []string{"## Followers", "| 1 | ", "| 3 | ", "3 followers cost flightd **", "(target ≤ 3×: ",
		"The kernel's part of that"} {
		if !strings.Contains(md, s) {
			t.Errorf("the section lacks %q:\n%s", s, md)
		}
	}
}

func TestParseFollowers(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want FollowersParams
		err  bool
	}{
		{"50:20:40000", FollowersParams{Followers: 50, Commits: 20, Rows: 40000}, false},
		{" ", FollowersParams{}, false},
		{"50:20", FollowersParams{}, true},
		{"50:0:40000", FollowersParams{}, true},
		{"50:x:40000", FollowersParams{}, true},
		{"1:2:3:4", FollowersParams{}, true},
	} {
		got, err := ParseFollowers(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseFollowers(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}
