package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// RawDecode decodes the given Parquet files with plain arrow-go pqarrow
// (the columns named, or all), files in parallel on workers goroutines,
// and returns the rows decoded: the limit the feed is measured against.
func RawDecode(ctx context.Context, paths []string, columns []string, workers int) (int64, error) {
	var (
		mu    sync.Mutex
		total int64
		first error
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for path := range work {
				n, err := decodeFile(ctx, path, columns)
				mu.Lock()
				total += n
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	return total, first
}

func decodeFile(ctx context.Context, path string, columns []string) (int64, error) {
	pf, err := file.OpenParquetFile(strings.TrimPrefix(path, "file://"), false)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	var cols []int
	if columns != nil {
		sc := pf.MetaData().Schema
		for _, c := range columns {
			idx := sc.ColumnIndexByName(c)
			if idx < 0 {
				return 0, fmt.Errorf("%s has no column %s", path, c)
			}
			cols = append(cols, idx)
		}
	}
	rr, err := fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var n int64
	for rr.Next() {
		n += rr.RecordBatch().NumRows()
	}
	return n, rr.Err()
}
