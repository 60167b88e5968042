package lake_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sluicefeed/sluice/lake"
)

type ctxKey struct{}

// TestMemoBuildsOnceUnderTheReadsContext: what a format memoizes for a
// read is built once, under the context the read started with (not a
// file's, which ends before the read does), and its error is every
// caller's; Close runs what was registered, last first, and OnClose after
// Close runs at once.
func TestMemoBuildsOnceUnderTheReadsContext(t *testing.T) {
	r := &lake.Read{}
	r.Start(context.WithValue(context.Background(), ctxKey{}, "read"))
	builds := 0
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := lake.Memo(r, "k", func(ctx context.Context) (string, error) {
				builds++ // under the memo's once: no race
				return ctx.Value(ctxKey{}).(string), nil
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	if builds != 1 || slices.ContainsFunc(got, func(v string) bool { return v != "read" }) {
		t.Fatalf("%d builds, values %v; want one build of \"read\"", builds, got)
	}
	boom := errors.New("boom")
	for range 2 {
		if _, err := lake.Memo(r, 2, func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
			t.Fatalf("err %v, want %v", err, boom)
		}
	}
	var order []int
	r.OnClose(func() { order = append(order, 1) })
	r.OnClose(func() { order = append(order, 2) })
	r.Close()
	r.OnClose(func() { order = append(order, 3) })
	if !slices.Equal(order, []int{2, 1, 3}) {
		t.Fatalf("closers ran in order %v, want [2 1 3]", order)
	}
}
