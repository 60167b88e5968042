package feed_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/lake"
)

// A copy-on-write rewrite gives the same feed whether its writer kept the
// carried-over rows in their order, interleaved them in a few streams, or
// shuffled them: with and without identity, in memory and spilled at
// several points (memory budgets from one that spills the first file to
// one that holds everything), and that feed is the naive one (every row
// the rewrite did not keep, changed or added is a change, equal rows
// counted as a multiset).
func TestRewriteOrderGivesTheSameFeed(t *testing.T) {
	schema, err := lake.NewSchema(0, nil,
		lake.Field{ID: 1, Name: "id", Type: lake.LongType{}, Required: true},
		lake.Field{ID: 2, Name: "name", Type: lake.StringType{}})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(5, 8))
	names := []string{"", "a", "b", "some longer name"}
	var before []memRow
	for i := range 4000 {
		r := memRow{id: int64(i), name: names[rnd.IntN(len(names))]}
		if i > 0 && rnd.IntN(20) == 0 {
			r = before[rnd.IntN(i)] // an equal row
		}
		before = append(before, r)
	}
	var after []memRow
	for _, r := range before {
		switch rnd.IntN(25) {
		case 0: // deleted
		case 1:
			after = append(after, memRow{id: r.id, name: r.name + "!"}) // updated
		case 2:
			after = append(after, r, r) // kept, and a copy
		default:
			after = append(after, r)
		}
		if rnd.IntN(50) == 0 {
			after = append(after, memRow{id: 10000 + r.id, name: "new"})
		}
	}
	orders := map[string][]memRow{"kept": after, "streams": nil, "shuffled": slices.Clone(after)}
	rnd.Shuffle(len(after), func(i, j int) {
		orders["shuffled"][i], orders["shuffled"][j] = orders["shuffled"][j], orders["shuffled"][i]
	})
	var streams [3][]memRow
	for _, r := range after {
		s := rnd.IntN(3)
		streams[s] = append(streams[s], r)
	}
	for len(streams[0])+len(streams[1])+len(streams[2]) > 0 {
		s := rnd.IntN(3)
		n := min(len(streams[s]), 1+rnd.IntN(100))
		orders["streams"], streams[s] = append(orders["streams"], streams[s][:n]...), streams[s][n:]
	}

	// The naive feed without identity: the multiset difference.
	count := map[memRow]int{}
	for _, r := range before {
		count[r]--
	}
	for _, r := range after {
		count[r]++
	}
	var wantDels, wantIns int
	for _, c := range count {
		if c < 0 {
			wantDels -= c
		} else {
			wantIns += c
		}
	}

	half := len(before) / 2
	a1, a2 := &memFile{path: "a1", rows: before[:half]}, &memFile{path: "a2", rows: before[half:]}
	var reference map[string][]change
	for _, order := range []string{"kept", "streams", "shuffled"} {
		rows := orders[order]
		b1, b2 := &memFile{path: "b1", rows: rows[:len(rows)/2]}, &memFile{path: "b2", rows: rows[len(rows)/2:]}
		tbl := &memTable{schema: schema, commits: []memCommit{
			{commit: linearCommit(1), appended: []*memFile{a1, a2}, strategy: lake.StrategyAppend},
			{commit: linearCommit(2), strategy: lake.StrategyRewrite, diffs: []memDiff{
				{file: a1, before: []uint32{}, absentAfter: true}, {file: a2, before: []uint32{}, absentAfter: true},
				{file: b1, absentBefore: true, after: []uint32{}}, {file: b2, absentBefore: true, after: []uint32{}}}},
		}}
		got := map[string][]change{}
		for _, budget := range []int64{4 << 10, 80 << 10, 120 << 10, 160 << 10, 0} {
			for _, identity := range [][]string{nil, {"id"}} {
				mem := memory.NewCheckedAllocator(arrowpool.Shared())
				eng := feed.New(memTables{tbl}, feed.Options{Allocator: mem, MemoryBudget: budget, SpillDir: t.TempDir()})
				from := int64(1)
				_, changes, _ := read(t, eng, feed.Request{Table: tableName, FromSnapshot: &from, Identity: identity})
				mem.AssertSize(t, 0)
				key := fmt.Sprint(identity)
				if want, ok := got[key]; ok {
					sameChangeSet(t, changes, want)
				} else {
					got[key] = changes
				}
				if identity != nil {
					continue
				}
				var dels, ins int
				for _, c := range changes {
					switch c.Op {
					case feed.OpDelete:
						dels++
					case feed.OpInsert:
						ins++
					default:
						t.Fatalf("%s, budget %d: a %s without identity", order, budget, c.Op)
					}
				}
				if dels != wantDels || ins != wantIns {
					t.Fatalf("%s, budget %d: %d deletes and %d inserts, want %d and %d", order, budget, dels, ins,
						wantDels, wantIns)
				}
			}
		}
		if reference == nil {
			reference = got
			continue
		}
		for key, want := range reference {
			sameChangeSet(t, got[key], want)
		}
	}
}

// sameChangeSet is sameChanges in any order: changes (an update_before with
// its update_after as one) compare sorted.
func sameChangeSet(t *testing.T, got, want []change) {
	t.Helper()
	sorted := func(cs []change) []change {
		var units [][]change
		for i := 0; i < len(cs); i++ {
			n := 1
			if cs[i].Op == feed.OpUpdateBefore && i+1 < len(cs) {
				n = 2
			}
			units = append(units, cs[i:i+n])
			i += n - 1
		}
		keys := make(map[*change]string, len(units))
		for _, u := range units {
			b, _ := json.Marshal(u)
			keys[&u[0]] = string(b)
		}
		slices.SortFunc(units, func(x, y []change) int { return strings.Compare(keys[&x[0]], keys[&y[0]]) })
		return slices.Concat(units...)
	}
	sameChanges(t, sorted(got), sorted(want))
}
