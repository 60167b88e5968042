package server_test

import (
	"testing"

	"github.com/sluicefeed/sluice/server"
)

// TestDecodeRequestTagNames: in JSON, a from_snapshot or to_snapshot that
// is a name rather than a number is the same request as from_ref or
// to_ref; numbers (and numeric strings) stay snapshot ids, and a name that
// clashes with the ref field it would become stays an error.
func TestDecodeRequestTagNames(t *testing.T) {
	for _, c := range []struct {
		json             string
		from, to         string
		fromSnap, toSnap int64
		wantErr          bool
	}{
		{json: `{"table": "a.b", "from_snapshot": "v1", "to_snapshot": "v2"}`, from: "v1", to: "v2"},
		{json: `{"table": "a.b", "fromSnapshot": "v1", "toSnapshot": "42"}`, from: "v1", toSnap: 42},
		{json: `{"table": "a.b", "from_snapshot": "-7", "to_snapshot": 9}`, fromSnap: -7, toSnap: 9},
		{json: `{"table": "a.b", "from_ref": "v1", "to_ref": "main"}`, from: "v1", to: "main"},
		{json: `{"table": "a.b", "from_snapshot": "v1", "from_ref": "v2"}`, wantErr: true},
		{json: `{"table": "a.b", "from_snapshot": "v1", "fromSnapshot": "v2"}`, wantErr: true},
		{json: `{"table": "a.b", "from_snapshot": "v1", "bogus": 1}`, wantErr: true},
	} {
		req, err := server.DecodeRequest([]byte(c.json))
		if c.wantErr {
			if err == nil {
				t.Errorf("%s: decoded %v, want an error", c.json, req)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if req.GetFromRef() != c.from || req.GetToRef() != c.to || req.GetFromSnapshot() != c.fromSnap ||
			req.GetToSnapshot() != c.toSnap || (c.from != "" && req.FromSnapshot != nil) {
			t.Errorf("%s: decoded %v", c.json, req)
		}
	}
}
