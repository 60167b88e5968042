package server

import (
	"bytes"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// maxRequestBytes bounds a ChangeRequest or action body.
const maxRequestBytes = 1 << 20

// Compression values of a ChangeRequest.
var compressions = []string{"", "lz4", "zstd"}

// DecodeRequest decodes a ChangeRequest from its binary protobuf or its JSON
// form. Bytes that start with '{' (after white space) are read as JSON
// first; JSON fields may use the proto names (from_snapshot) or their
// lowerCamelCase forms, and int64 values may be numbers or strings. Unknown
// JSON fields are an error.
func DecodeRequest(b []byte) (*sluicev1.ChangeRequest, error) {
	if len(b) == 0 {
		return nil, badRequestf("empty request: want a ChangeRequest as binary protobuf or JSON, e.g. {\"table\": \"ns.table\"}")
	}
	if len(b) > maxRequestBytes {
		return nil, badRequestf("request of %d bytes is larger than the limit of %d", len(b), maxRequestBytes)
	}
	req := &sluicev1.ChangeRequest{}
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		jsonErr := protojson.UnmarshalOptions{}.Unmarshal(b, req)
		if jsonErr == nil {
			return req, nil
		}
		// Binary protobuf can start with '{' too; accept it if it parses.
		bin := &sluicev1.ChangeRequest{}
		if proto.Unmarshal(b, bin) == nil && bin.GetTable() != "" {
			return bin, nil
		}
		return nil, badRequestf("malformed JSON ChangeRequest: %v", jsonErr)
	}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, badRequestf("malformed ChangeRequest: not JSON, and not binary protobuf (%v)", err)
	}
	return req, nil
}

// feedRequest validates the wire request's server-level fields and converts
// it to the engine's request.
func feedRequest(req *sluicev1.ChangeRequest) (feed.Request, error) {
	if !slices.Contains(compressions, req.GetCompression()) {
		return feed.Request{}, badRequestf("compression %q: want \"\" (none), \"lz4\" or \"zstd\"", req.GetCompression())
	}
	if isStream(req) {
		return feed.Request{}, badRequestf("follow, start and consumer make a stream, which DoGet reads; " +
			"explain plans a window: leave them out")
	}
	return windowRequest(req), windowRequest(req).Validate()
}

// windowRequest converts the wire request to the engine's request, without
// validating it.
func windowRequest(req *sluicev1.ChangeRequest) feed.Request {
	return feed.Request{
		Table:           req.GetTable(),
		FromSnapshot:    req.FromSnapshot,
		FromTimestampMs: req.FromTimestampMs,
		ToSnapshot:      req.ToSnapshot,
		ToTimestampMs:   req.ToTimestampMs,
		Columns:         req.GetColumns(),
		Filter:          req.GetFilter(),
		Identity:        req.GetIdentity(),
		FoldUpdates:     req.GetFoldUpdates(),
		NetChanges:      req.GetNetChanges(),
	}
}

// isStream reports whether the request asks for a stream (follow, a start
// mode or a durable consumer) rather than one window.
func isStream(req *sluicev1.ChangeRequest) bool {
	return req.GetFollow() || req.GetStart() != "" || req.GetConsumer() != ""
}

// pinnedTicket returns the ticket that reads exactly the planned window:
// the request with its window resolved to snapshot ids.
func pinnedTicket(req *sluicev1.ChangeRequest, p *feed.Plan) ([]byte, error) {
	pinned := proto.Clone(req).(*sluicev1.ChangeRequest)
	pinned.FromTimestampMs, pinned.ToTimestampMs = nil, nil
	pinned.FromSnapshot, pinned.ToSnapshot = p.From, p.To
	if p.To == nil {
		// The table had no snapshot: pin the empty state, so that a commit
		// landing before DoGet does not leak into the read.
		empty := feed.NoSnapshot
		pinned.ToSnapshot = &empty
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(pinned)
}

func errNotImplemented(what string) error {
	return fmt.Errorf("%w: %s", ErrNotImplemented, what)
}
