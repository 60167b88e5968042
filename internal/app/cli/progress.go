package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is how often the progress line is redrawn; progressAfter
// how long a read to stdout runs before it appears.
const (
	progressEvery = 200 * time.Millisecond
	progressAfter = time.Second
)

// progress draws one line on stderr with the rows and bytes written and
// their rates, redrawn in place.
type progress struct {
	w        io.Writer
	rows     atomic.Int64
	bytes    atomic.Int64
	snapshot atomic.Int64
	start    time.Time
	done     chan struct{}
	wg       sync.WaitGroup
	drawn    atomic.Bool
	on       bool
}

// startProgress starts drawing when on: at once when writing a file,
// after progressAfter otherwise.
func startProgress(w io.Writer, on, file bool) *progress {
	p := &progress{w: w, start: time.Now(), done: make(chan struct{}), on: on}
	if !on {
		return p
	}
	p.wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case now := <-t.C:
				if file || now.Sub(p.start) >= progressAfter {
					p.drawn.Store(true)
					fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(now))
				}
			}
		}
	})
	return p
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func (p *progress) line(now time.Time) string {
	el := now.Sub(p.start)
	secs := max(el.Seconds(), 1e-3)
	rows, bytes := p.rows.Load(), p.bytes.Load()
	s := fmt.Sprintf("%c %d rows  %s  %.0f rows/s  %s/s", spinner[int(el/progressEvery)%len(spinner)],
		rows, fmtBytes(bytes), float64(rows)/secs, fmtBytes(int64(float64(bytes)/secs)))
	if snap := p.snapshot.Load(); snap != 0 {
		s += fmt.Sprintf("  snapshot %d", snap)
	}
	return s
}

// stop ends the drawing and, when it drew or wrote a file, leaves a
// summary line.
func (p *progress) stop(ok bool, file string) {
	if !p.on {
		return
	}
	close(p.done)
	p.wg.Wait()
	if p.drawn.Load() {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	if !ok || (file == "" && !p.drawn.Load()) {
		return
	}
	el := time.Since(p.start)
	rows, bytes := p.rows.Load(), p.bytes.Load()
	to := ""
	if file != "" {
		to = " to " + termValue(file)
	}
	fmt.Fprintf(p.w, "%d rows, %s%s in %s (%.0f rows/s, %s/s)\n", rows, fmtBytes(bytes), to,
		el.Round(time.Millisecond), float64(rows)/max(el.Seconds(), 1e-3), fmtBytes(int64(float64(bytes)/max(el.Seconds(), 1e-3))))
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
