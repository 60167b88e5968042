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
		if named, ok := refsInJSON(b); ok {
			req = &sluicev1.ChangeRequest{}
			if protojson.Unmarshal(named, req) == nil {
				return req, nil
			}
		}
		// Binary protobuf can start with '{' too; accept it if it parses.
		bin := &sluicev1.ChangeRequest{}
		if proto.Unmarshal(b, bin) == nil && bin.GetTable() != "" {
			return bin, nil
		}
		return nil, badRequestf("malformed JSON ChangeRequest: %s", clipText(clipQuoted(jsonErr.Error())))
	}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, badRequestf("malformed ChangeRequest: not JSON, and not binary protobuf (%s)", clipText(clipQuoted(err.Error())))
	}
	return req, nil
}

// request is a ChangeRequest decoded and validated once, its filter parsed
// once: a window, or a stream (follow, a start mode or a consumer). Every
// call that takes a ChangeRequest goes through parseRequest or newRequest,
// then authorizes it once (Server.authorize), then dispatches.
type request struct {
	wire *sluicev1.ChangeRequest
	// window is the request of a window; stream that of a stream (nil for
	// a window).
	window feed.Request
	stream *feed.StreamRequest
	// consumer is a stream's durable consumer ("" for none).
	consumer    string
	compression string
}

// parseRequest decodes and validates a ChangeRequest: the bytes of a
// ticket, a descriptor's command or an action body.
func parseRequest(b []byte) (*request, error) {
	req, err := DecodeRequest(b)
	if err != nil {
		return nil, err
	}
	return newRequest(req)
}

// newRequest validates a decoded ChangeRequest and parses its filter.
func newRequest(req *sluicev1.ChangeRequest) (*request, error) {
	r, err := validate(req)
	if err != nil {
		return nil, clipNames(err, wireNames(req)...)
	}
	return r, nil
}

func validate(req *sluicev1.ChangeRequest) (*request, error) {
	r := &request{wire: req, compression: req.GetCompression(), consumer: req.GetConsumer()}
	if !slices.Contains(compressions, r.compression) {
		return nil, badRequestf("compression %s: want \"\" (none), \"lz4\" or \"zstd\"", quoteName(r.compression))
	}
	w := feed.Request{
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
		Layout:          req.GetLayout(),
		Backend:         req.GetBackend(),
		Lineage:         req.GetLineage(),
		Ref:             req.GetRef(),
		FromRef:         req.GetFromRef(),
		ToRef:           req.GetToRef(),
	}
	if !isStream(req) {
		if req.GetOnGap() != "" {
			return nil, badRequestf("on_gap says what a stream does when its snapshot has expired; a window " +
				"(no follow, start or consumer) that starts at an expired snapshot is FAILED_PRECONDITION: leave it out")
		}
		if err := checkSplit(req, &w); err != nil {
			return nil, err
		}
		var err error
		r.window, err = w.Parse()
		return r, err
	}
	if req.GetMaxEndpoints() > 0 || req.Part != nil {
		return nil, badRequestf("max_endpoints and part split a window: a stream (follow, start or consumer) " +
			"is read as one, in order; leave them out")
	}
	if r.consumer != "" {
		if err := checkConsumer(r.consumer); err != nil {
			return nil, err
		}
	}
	sr, err := feed.StreamRequest{Request: w, Follow: req.GetFollow(), Start: req.GetStart(),
		OnGap: req.GetOnGap()}.Parse()
	if err != nil {
		return nil, err
	}
	r.stream = &sr
	return r, nil
}

// shape is the request's table and shape of changes, without a window: the
// request whose schema a stream's FlightInfo and GetSchema return.
func (r *request) shape() feed.Request {
	if r.stream == nil {
		return r.window
	}
	shape := r.stream.Request
	shape.FromSnapshot, shape.FromTimestampMs = nil, nil
	return shape
}

// names are the client-supplied names of the request, which messages may
// repeat (see clipNames).
func (r *request) names() []string { return wireNames(r.wire) }

func wireNames(req *sluicev1.ChangeRequest) []string {
	out := append([]string{req.GetTable(), req.GetConsumer(), req.GetStart(), req.GetCompression(), req.GetLayout(),
		req.GetRef(), req.GetFromRef(), req.GetToRef()}, req.GetColumns()...)
	return append(out, req.GetIdentity()...)
}

// isStream reports whether the request asks for a stream (follow, a start
// mode or a durable consumer) rather than one window.
func isStream(req *sluicev1.ChangeRequest) bool {
	return req.GetFollow() || req.GetStart() != "" || req.GetConsumer() != ""
}

// errStreamNotWindow refuses a stream request where a window is wanted.
var errStreamNotWindow = badRequestf("follow, start and consumer make a stream, which DoGet reads; " +
	"explain plans a window: leave them out")

// checkSplit checks a window's max_endpoints and part, and sets the part
// of its feed request.
func checkSplit(req *sluicev1.ChangeRequest, w *feed.Request) error {
	if n := req.GetMaxEndpoints(); n > feed.MaxParts {
		return badRequestf("max_endpoints %d is more than the limit of %d", n, feed.MaxParts)
	}
	if req.GetMaxEndpoints() > 1 && req.GetNetChanges() {
		return badRequestf("net_changes collapse the whole window, which cannot be split into endpoints: " +
			"leave out max_endpoints, or read the changes without net_changes")
	}
	if req.GetMaxEndpoints() > 1 && req.Part != nil {
		return badRequestf("part is a share of a split window, which cannot be split again: " +
			"ask max_endpoints of the window without part")
	}
	if pt := req.Part; pt != nil {
		w.Part = &feed.Part{FirstSnapshot: pt.GetFirstSnapshot(), LastSnapshot: pt.GetLastSnapshot(),
			FirstFile: int(pt.GetFirstFile()), EndFile: int(pt.GetEndFile()), FileCount: int(pt.GetFileCount())}
	}
	return nil
}

// pinnedTicket returns the ticket that reads exactly the planned window:
// the request with its window resolved to snapshot ids, and part (nil: the
// request's own, if any).
func pinnedTicket(req *sluicev1.ChangeRequest, p *feed.Plan, part *feed.Part) ([]byte, error) {
	pinned := proto.Clone(req).(*sluicev1.ChangeRequest)
	pinned.MaxEndpoints = 0
	if part != nil {
		pinned.Part = &sluicev1.WindowPart{FirstSnapshot: part.FirstSnapshot, LastSnapshot: part.LastSnapshot,
			FirstFile: uint32(part.FirstFile), EndFile: uint32(part.EndFile), FileCount: uint32(part.FileCount)}
	}
	pinned.FromTimestampMs, pinned.ToTimestampMs = nil, nil
	pinned.FromRef, pinned.ToRef = "", ""
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
