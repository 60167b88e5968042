package paimon

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/avro/ocf"
)

// maxAvroBlock bounds an Avro block, compressed and decompressed: a
// manifest block is far smaller, and an untrusted header must not make the
// decoder allocate more.
const maxAvroBlock = 64 << 20

// readAvro decodes every record of an Avro object container file (the
// schema the file carries: Paimon's manifests gain fields across
// versions, so records decode by field name) and calls fn with each.
func readAvro(data []byte, fn func(rec record) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("avro decoder failed: %v", p)
		}
	}()
	r, err := ocf.NewReader(bytes.NewReader(data), ocf.WithMaxBlockBytes(maxAvroBlock), ocf.WithMaxDecompressedBlockBytes(maxAvroBlock))
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		var v any
		if err := r.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("record is a %T", v)
		}
		if err := fn(record(m)); err != nil {
			return err
		}
	}
}

// record is a decoded Avro record with typed getters; each getter fails
// on a missing required field or a value of the wrong type.
type record map[string]any

func (r record) long(name string) (int64, error) {
	switch v := r[name].(type) {
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	}
	return 0, fmt.Errorf("field %s: %T is not a number", name, r[name])
}

// optLong reads a nullable number, def when null or absent.
func (r record) optLong(name string, def int64) (int64, error) {
	if r[name] == nil {
		return def, nil
	}
	return r.long(name)
}

func (r record) int(name string) (int, error) {
	n, err := r.long(name)
	if err == nil && int64(int(n)) != n {
		return 0, fmt.Errorf("field %s: %d out of range", name, n)
	}
	return int(n), err
}

func (r record) str(name string) (string, error) {
	if s, ok := r[name].(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("field %s: %T is not a string", name, r[name])
}

func (r record) optStr(name string) (string, error) {
	if r[name] == nil {
		return "", nil
	}
	return r.str(name)
}

func (r record) bytes(name string) ([]byte, error) {
	switch v := r[name].(type) {
	case []byte:
		return v, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("field %s: %T is not bytes", name, r[name])
}

func (r record) rec(name string) (record, error) {
	if m, ok := r[name].(map[string]any); ok {
		return record(m), nil
	}
	return nil, fmt.Errorf("field %s: %T is not a record", name, r[name])
}

func (r record) strs(name string) ([]string, error) {
	if r[name] == nil {
		return nil, nil
	}
	a, ok := r[name].([]any)
	if !ok {
		return nil, fmt.Errorf("field %s: %T is not an array", name, r[name])
	}
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("field %s[%d]: %T is not a string", name, i, x)
		}
		out[i] = s
	}
	return out, nil
}

// optLongs reads a nullable array of nullable numbers (null counts): -1
// for a null element.
func (r record) optLongs(name string) ([]int64, error) {
	if r[name] == nil {
		return nil, nil
	}
	a, ok := r[name].([]any)
	if !ok {
		return nil, fmt.Errorf("field %s: %T is not an array", name, r[name])
	}
	out := make([]int64, len(a))
	for i, x := range a {
		if x == nil {
			out[i] = -1
			continue
		}
		n, err := record{"v": x}.long("v")
		if err != nil {
			return nil, fmt.Errorf("field %s[%d]: %w", name, i, err)
		}
		out[i] = n
	}
	return out, nil
}
