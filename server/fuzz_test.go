package server

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// FuzzDecodeRequest checks the decoder of client tickets and commands: it
// never panics, every failure is ErrBadRequest, and what it accepts
// survives a binary round trip and converts to an engine request or fails
// with an error that has a contract code.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []string{
		`{"table": "demo.orders"}`,
		`{"table": "demo.orders", "from_snapshot": "1234", "to_snapshot": 5678, "columns": ["id"], "filter": "id > 3"}`,
		`{"table": "a.b", "fromSnapshot": "-1", "identity": ["k"], "fold_updates": true, "net_changes": true}`,
		`{"table": "a.b", "compression": "zstd", "follow": true, "start": "latest", "consumer": "c1"}`,
		` {"table": 1}`, `{`, `[]`, `null`, ``, "\x0a\x05a.b.c", "{\x0a\x03a.b",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	bin, _ := proto.Marshal(&sluicev1.ChangeRequest{Table: "ns.t", Columns: []string{"a", "b"}, Filter: "a = 1"})
	f.Add(bin)
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("decode error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		again, err := proto.Marshal(req)
		if err != nil {
			t.Fatalf("accepted request does not marshal: %v", err)
		}
		back := &sluicev1.ChangeRequest{}
		if err := proto.Unmarshal(again, back); err != nil || !proto.Equal(req, back) {
			t.Fatalf("round trip changed the request: %v", err)
		}
		if _, err := newRequest(req); err != nil {
			if codeOf(err) == codes.Internal {
				t.Fatalf("request error %v maps to Internal", err)
			}
		}
	})
}

// FuzzDecodeBody checks the decoder of action bodies.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"table": "a.b"}`, `{}`, ``, `{"table": 1}`, `{"table": "a"} x`, `[`, `{"x": 1}`, `{"consumer": "c", "table": "a.b", "snapshot": "12"}`, `{"snapshot": 1e3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var body tableBody
		if err := decodeBody("commit_seq", b, &body); err != nil && !errors.Is(err, ErrBadRequest) {
			t.Fatalf("decode error %v does not wrap ErrBadRequest", err)
		}
		var ack ackBody
		if err := decodeBody("ack", b, &ack); err != nil && !errors.Is(err, ErrBadRequest) {
			t.Fatalf("ack decode error %v does not wrap ErrBadRequest", err)
		}
	})
}
