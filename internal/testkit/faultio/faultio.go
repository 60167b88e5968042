// Package faultio is a fault-injecting file IO for the tests of the
// engine and the server: while armed, reading a data file panics, as a
// storage client with a bug would.
package faultio

import (
	"context"
	"strings"
	"sync/atomic"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// PanickingTable returns tbl reading its files through an IO whose data
// files (.parquet) panic on every read while armed is true.
func PanickingTable(tbl *table.Table, armed *atomic.Bool) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) {
			fsys, err := tbl.FS(ctx)
			if err != nil {
				return nil, err
			}
			return panickingIO{IO: fsys, armed: armed}, nil
		}, nil)
}

type panickingIO struct {
	iceio.IO
	armed *atomic.Bool
}

func (p panickingIO) Open(name string) (iceio.File, error) {
	f, err := p.IO.Open(name)
	if err != nil || !strings.HasSuffix(name, ".parquet") {
		return f, err
	}
	return panickingFile{File: f, armed: p.armed}, nil
}

type panickingFile struct {
	iceio.File
	armed *atomic.Bool
}

func (f panickingFile) ReadAt(b []byte, off int64) (int, error) {
	f.check()
	return f.File.ReadAt(b, off)
}

func (f panickingFile) Read(b []byte) (int, error) {
	f.check()
	return f.File.Read(b)
}

func (f panickingFile) check() {
	if f.armed.Load() {
		panic("injected: storage client bug")
	}
}
