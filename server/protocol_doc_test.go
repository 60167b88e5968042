package server

// These tests keep docs/PROTOCOL.md, the wire contract users read, true
// to the server: its request fields and examples, metadata keys, actions,
// RPCs, start modes, limits and error table are read from the page and
// checked against the code (protocol_live_test.go checks what a running
// server returns).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/filter"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/internal/lib/storage/storageerr"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
	"github.com/sluicefeed/sluice/lake"
	"github.com/sluicefeed/sluice/progress"
)

// The wire contract, and the Python client's error mapping it describes,
// from this package.
const (
	protocolDoc    = "../docs/PROTOCOL.md"
	pythonErrorsPy = "../clients/python/sluice/errors.py"
)

// docSentinels are the errors the server classifies, named as its code
// names them, each with a phrase of the situation cell of the error table
// row that must describe it. TestProtocolDocErrorTable fails when a
// package the server links declares a sentinel with a class (errclass.New)
// missing here.
var docSentinels = []struct {
	name   string
	err    error
	phrase string
}{
	{"ErrBadRequest", ErrBadRequest, "a malformed request"},
	{"feed.ErrInvalidRequest", feed.ErrInvalidRequest, "without a `table`"},
	{"feed.ErrUnknownColumn", feed.ErrUnknownColumn, "an unknown column"},
	{"feed.ErrInvalidFilter", feed.ErrInvalidFilter, "a bad filter"},
	{"feed.ErrNotAncestor", feed.ErrNotAncestor, "not an ancestor"},
	{"catalog.ErrInvalidName", catalog.ErrInvalidName, "a table name"},
	{"feed.ErrSnapshotNotFound", feed.ErrSnapshotNotFound, "an unknown snapshot"},
	{"catalog.ErrTableNotFound", catalog.ErrTableNotFound, "an unknown table"},
	{"progress.ErrNotFound", progress.ErrNotFound, "without progress"},
	{"feed.ErrRefNotFound", feed.ErrRefNotFound, "an unknown ref"},
	{"feed.ErrNoRefs", feed.ErrNoRefs, "no branches or tags"},
	{"feed.ErrResyncRequired", feed.ErrResyncRequired, "resync required"},
	{"feed.ErrUnsupported", feed.ErrUnsupported, "a table feature"},
	{"feed.ErrInconsistentSnapshot", feed.ErrInconsistentSnapshot, "disagree with its summary"},
	{"feed.ErrUnreadable", feed.ErrUnreadable, "unreadable table file"},
	{"feed.ErrSchemaChanged", feed.ErrSchemaChanged, "schema changed"},
	{"catalog.ErrAmbiguous", catalog.ErrAmbiguous, "served twice"},
	{"ErrNotProtecting", ErrNotProtecting, "consumers are not protected"},
	{"catalog.ErrReadOnly", catalog.ErrReadOnly, "catalog: read only"},
	{"catalog.ErrConflict", catalog.ErrConflict, "catalog or storage unreachable"},
	{"storage.ErrBucketNotFound", storage.ErrBucketNotFound, "bucket not found"},
	{"storage.ErrMisconfigured", storage.ErrMisconfigured, "storage settings that cannot work"},
	{"storage.ErrAccessDenied", storage.ErrAccessDenied, "flightd's own keys"},
	{"storage.ErrOutsideRoot", storage.ErrOutsideRoot, "leads out of its local root"},
	{"feed.ErrTooLarge", feed.ErrTooLarge, "a single row"},
	{"ErrMessageTooLarge", ErrMessageTooLarge, "would encode"},
	{"ErrLimit", ErrLimit, "a server limit"},
	{"ErrStalled", ErrStalled, "stopped reading"},
	{"feed.ErrSpill", feed.ErrSpill, "cannot spill to disk"},
	{"auth.ErrUnauthenticated", auth.ErrUnauthenticated, "credentials"},
	{"auth.ErrPermissionDenied", auth.ErrPermissionDenied, "not granted"},
	{"progress.ErrNotOwner", progress.ErrNotOwner, "another principal owns"},
	{"catalog.ErrUnavailable", catalog.ErrUnavailable, "catalog or storage unreachable"},
	{"feed.ErrStorageUnavailable", feed.ErrStorageUnavailable, "catalog or storage unreachable"},
	{"storage.ErrUnavailable", storage.ErrUnavailable, "catalog or storage unreachable"},
	{"progress.ErrUnavailable", progress.ErrUnavailable, "progress store unreachable"},
	{"ErrShuttingDown", ErrShuttingDown, "shutting down"},
	{"ErrNotImplemented", ErrNotImplemented, "not offered"},
	{"context.Canceled", context.Canceled, "cancelled"},
	{"context.DeadlineExceeded", context.DeadlineExceeded, "deadline"},
	// The sentinels feed and storage re-export, under the names of the
	// packages that declare them (the format seam, the filter language,
	// the storage layer's leaf package), and the table formats' own.
	{"lake.ErrUnknownColumn", lake.ErrUnknownColumn, "an unknown column"},
	{"filter.ErrInvalidFilter", filter.ErrInvalidFilter, "a bad filter"},
	{"lake.ErrSnapshotNotFound", lake.ErrSnapshotNotFound, "an unknown snapshot"},
	{"lake.ErrRefNotFound", lake.ErrRefNotFound, "an unknown ref"},
	{"lake.ErrNoRefs", lake.ErrNoRefs, "no branches or tags"},
	{"lake.ErrResyncRequired", lake.ErrResyncRequired, "resync required"},
	{"lake.ErrUnsupported", lake.ErrUnsupported, "a table feature"},
	{"lake.ErrInconsistentSnapshot", lake.ErrInconsistentSnapshot, "disagree with its summary"},
	{"lake.ErrUnreadable", lake.ErrUnreadable, "unreadable table file"},
	{"lake.ErrStorageUnavailable", lake.ErrStorageUnavailable, "catalog or storage unreachable"},
	{"storageerr.ErrBucketNotFound", storageerr.ErrBucketNotFound, "bucket not found"},
	{"storageerr.ErrMisconfigured", storageerr.ErrMisconfigured, "storage settings that cannot work"},
	{"storageerr.ErrAccessDenied", storageerr.ErrAccessDenied, "flightd's own keys"},
	{"storageerr.ErrOutsideRoot", storageerr.ErrOutsideRoot, "leads out of its local root"},
	{"storageerr.ErrUnavailable", storageerr.ErrUnavailable, "catalog or storage unreachable"},
	{"", errors.New("an error nothing classifies"), "a bug"},
}

func TestProtocolDocErrorTable(t *testing.T) {
	doc := readProtocolDoc(t)
	rows := docTable(t, doc, "situation", "gRPC code", "pyarrow raises", "the Python client raises")

	driven := map[string]bool{}
	for _, s := range docSentinels {
		driven[s.name] = true
	}
	for _, name := range classifiedSentinels(t) {
		if !driven[name] {
			t.Errorf("codeOf classifies %s, which docSentinels does not drive through the error table: add it, "+
				"and its row to %s", name, protocolDoc)
		}
	}

	hit := make([]bool, len(rows))
	for _, s := range docSentinels {
		err := fmt.Errorf("context of the failure: %w", s.err)
		got := codeOf(toStatus(err))
		var match []int
		for i, row := range rows {
			if strings.Contains(row[0], s.phrase) {
				match = append(match, i)
			}
		}
		if len(match) != 1 {
			t.Errorf("%s: %d rows of the error table mention %q; want one", s.name, len(match), s.phrase)
			continue
		}
		hit[match[0]] = true
		if want := docCode(t, rows[match[0]][1]); got != want {
			t.Errorf("%s (%q) is %s; the error table says %s", s.name, rows[match[0]][0], got, want)
		}
	}
	pyTypes, pyClasses := pythonErrorMapping(t)
	for i, row := range rows {
		if !hit[i] {
			t.Errorf("no error the server classifies is the row %q", row[0])
		}
		code := docCode(t, row[1])
		name := row[1]
		if !slices.Contains(pyTypes[name], row[2]) {
			t.Errorf("%s: the table says pyarrow raises %s; the Python client expects one of %v", code, row[2],
				pyTypes[name])
		}
		want, ok := pyClasses[name]
		if !ok {
			want = "sluice.SluiceError"
		}
		if row[3] != want {
			t.Errorf("%s: the table says the Python client raises %s; it raises %s", code, row[3], want)
		}
	}
}

// classifiedSentinels returns the sentinels codeOf classifies: those
// declared with errclass.New in this package and in the module's packages
// it imports, directly or not, named as this package's code names them
// ("ErrLimit", "feed.ErrInvalidRequest").
func classifiedSentinels(t *testing.T) []string {
	t.Helper()
	const module = "github.com/sluicefeed/sluice"
	var out []string
	seen := map[string]bool{}
	var visit func(dir string, self bool)
	visit = func(dir string, self bool) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), dir+"/"+name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			errclassName := ""
			for _, imp := range f.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if rest, ok := strings.CutPrefix(path, module+"/"); ok {
					visit("../"+rest, false)
				}
				if path == module+"/internal/lib/errclass" {
					errclassName = "errclass"
					if imp.Name != nil {
						errclassName = imp.Name.Name
					}
				}
			}
			if errclassName == "" {
				continue
			}
			for _, name := range classedVars(f, errclassName) {
				if !self {
					name = f.Name.Name + "." + name
				}
				out = append(out, name)
			}
		}
	}
	visit(".", true)
	if len(out) == 0 {
		t.Fatal("no package the server links declares a sentinel with errclass.New")
	}
	return out
}

// classedVars returns the variables of a file declared with errclass.New,
// the errclass package imported as pkg.
func classedVars(f *ast.File, pkg string) []string {
	var out []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				call, ok := v.(*ast.CallExpr)
				if !ok {
					continue
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "New" {
					continue
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == pkg && i < len(vs.Names) {
					out = append(out, vs.Names[i].Name)
				}
			}
		}
	}
	return out
}

// docCode parses a code as the contract writes it (INVALID_ARGUMENT).
func docCode(t *testing.T, name string) codes.Code {
	t.Helper()
	var c codes.Code
	if err := c.UnmarshalJSON([]byte(`"` + name + `"`)); err != nil {
		t.Fatalf("%q is not a gRPC code name: %v", name, err)
	}
	return c
}

var (
	docPyTypeCodes = regexp.MustCompile(`\((flight|pa)\.(\w+), \(([^)]*)\)\)`)
	docPyQuoted    = regexp.MustCompile(`"(\w+)"`)
	docPyClass     = regexp.MustCompile(`(?m)^class (\w+)\(`)
	docPyDefault   = regexp.MustCompile(`default_code = "(\w+)"`)
)

// pythonErrorMapping reads the Python client's error mapping: the pyarrow
// exception types that can stand for each code, and the SluiceError
// subclass of each code that has its own.
func pythonErrorMapping(t *testing.T) (types map[string][]string, classes map[string]string) {
	t.Helper()
	b, err := os.ReadFile(pythonErrorsPy)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	types = map[string][]string{}
	for _, m := range docPyTypeCodes.FindAllStringSubmatch(src, -1) {
		typ := map[string]string{"flight": "pyarrow.flight.", "pa": "pyarrow."}[m[1]] + m[2]
		for _, q := range docPyQuoted.FindAllStringSubmatch(m[3], -1) {
			types[q[1]] = append(types[q[1]], typ)
		}
	}
	classes = map[string]string{}
	locs := docPyClass.FindAllStringSubmatchIndex(src, -1)
	for i, loc := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := src[loc[2]:loc[3]]
		if d := docPyDefault.FindStringSubmatch(src[loc[1]:end]); d != nil && name != "SluiceError" {
			classes[d[1]] = "sluice." + name
		}
	}
	if len(types) == 0 || len(classes) == 0 {
		t.Fatalf("%s: found no pyarrow types (%d) or classes (%d)", pythonErrorsPy, len(types), len(classes))
	}
	return types, classes
}

func TestProtocolDocRequestFields(t *testing.T) {
	doc := readProtocolDoc(t)
	fields := (&sluicev1.ChangeRequest{}).ProtoReflect().Descriptor().Fields()
	documented := map[string]bool{}
	for _, row := range docTable(t, doc, "field", "JSON alias", "type", "meaning") {
		documented[row[0]] = true
		fd := fields.ByName(protoreflect.Name(row[0]))
		if fd == nil {
			t.Errorf("the contract documents the field %q, which ChangeRequest lacks", row[0])
			continue
		}
		if row[1] != fd.JSONName() {
			t.Errorf("field %s: the contract gives the JSON alias %q; protojson's is %q", row[0], row[1], fd.JSONName())
		}
		typ := fd.Kind().String()
		switch {
		case fd.IsList():
			typ = "repeated " + typ
		case fd.HasOptionalKeyword():
			typ = "optional " + typ
		}
		if row[2] != typ {
			t.Errorf("field %s: the contract says %q; the proto says %q", row[0], row[2], typ)
		}
	}
	for i := range fields.Len() {
		if name := string(fields.Get(i).Name()); !documented[name] {
			t.Errorf("ChangeRequest.%s is not in the request table of %s", name, protocolDoc)
		}
	}
}

// checkDocWire decodes and validates a request as the server does before it
// reads any table.
func checkDocWire(b []byte) error {
	_, err := parseRequest(b)
	return err
}

func TestProtocolDocRequestExamples(t *testing.T) {
	doc := readProtocolDoc(t)
	for _, line := range docBlock(t, doc, "json accepted") {
		if err := checkDocWire([]byte(line)); err != nil {
			t.Errorf("the contract accepts %s; the server says: %v", line, err)
		}
	}
	for _, row := range docTable(t, doc, "rejected request", "why") {
		err := checkDocWire([]byte(row[0]))
		if got := codeOf(err); err == nil || got != codes.InvalidArgument {
			t.Errorf("the contract refuses %s (%s) with INVALID_ARGUMENT; the server gives %v (%s)", row[0], row[1],
				err, got)
		}
	}

	var first *sluicev1.ChangeRequest
	for _, line := range docBlock(t, doc, "json equivalent") {
		req, err := DecodeRequest([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if first == nil {
			first = req
		} else if !proto.Equal(first, req) {
			t.Errorf("the contract says %s is the same request as the first; it decodes to %v, not %v", line, req, first)
		}
	}
	bin, err := proto.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	if req, err := DecodeRequest(bin); err != nil || !proto.Equal(first, req) {
		t.Errorf("the binary form of %v decodes to %v, %v", first, req, err)
	}
	// Binary protobuf ignores unknown field numbers.
	bin = protowire.AppendVarint(protowire.AppendTag(bin, 999, protowire.VarintType), 7)
	req, err := DecodeRequest(bin)
	if err == nil {
		req.ProtoReflect().SetUnknown(nil)
	}
	if err != nil || !proto.Equal(first, req) {
		t.Errorf("a binary request with an unknown field: %v, %v; the contract says it is ignored", req, err)
	}
}

func TestProtocolDocAppMetadata(t *testing.T) {
	doc := readProtocolDoc(t)
	rows := docTable(t, doc, "key", "JSON type", "in", "meaning")
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 0)
	defer rec.Release()
	b := feed.Batch{Record: rec, Snapshot: feed.Snapshot{ID: 5, CommitSeq: 2, TimestampMs: 9}, SnapshotComplete: true}
	kinds := map[string][]int{"every batch": {kindChanges, kindState, kindHeartbeat, kindGap, kindCoalesced},
		"full-state batches": {kindState}, "heartbeats": {kindHeartbeat}, "a gap": {kindGap},
		"coalesced windows": {kindCoalesced}}
	sent := map[int]map[string]any{}
	for _, kind := range kinds["every batch"] {
		m := map[string]any{}
		meta := appMetadata(b, kind)
		switch kind {
		case kindGap:
			meta = gapMetadata(b, feed.Gap{Lost: 5, Earliest: 7, Current: 9})
		case kindCoalesced:
			meta = coalescedMetadata(b, feed.Coalesced{From: 3, To: 5})
		}
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatal(err)
		}
		sent[kind] = m
	}
	documented := map[string]bool{}
	for _, row := range rows {
		key, typ, in := row[0], row[1], row[2]
		documented[key] = true
		where, ok := kinds[in]
		if !ok {
			t.Fatalf("app_metadata key %s: %q is not one of %v", key, in, slices.Sorted(maps.Keys(kinds)))
		}
		for kind, m := range sent {
			v, present := m[key]
			if present != slices.Contains(where, kind) {
				t.Errorf("app_metadata key %s is in %q batches; it is present %v in %v", key, in, present, m)
			}
			if !present {
				continue
			}
			if _, isNum := v.(float64); isNum != strings.HasPrefix(typ, "number") {
				t.Errorf("app_metadata key %s is %T; the contract says %s", key, v, typ)
			}
			if _, isBool := v.(bool); isBool != strings.HasPrefix(typ, "bool") {
				t.Errorf("app_metadata key %s is %T; the contract says %s", key, v, typ)
			}
		}
	}
	for _, m := range sent {
		for key := range m {
			if !documented[key] {
				t.Errorf("app_metadata key %s (in %v) is not in the table of %s", key, m, protocolDoc)
			}
		}
	}
	for _, line := range docBlock(t, doc, "json") {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the app_metadata example %s: %v", line, err)
		}
		for key := range m {
			if !documented[key] {
				t.Errorf("the app_metadata example %s has the key %s, which the table lacks", line, key)
			}
		}
	}
}

func TestProtocolDocActions(t *testing.T) {
	doc := readProtocolDoc(t)
	svc := sluicev1.File_sluice_v1_sluice_proto.Services().ByName("ControlService")
	if svc == nil {
		t.Fatal("the proto has no ControlService")
	}
	registered := map[string]bool{}
	for _, a := range actionTypes {
		registered[a.Type] = true
	}
	typed := map[string]string{}
	for _, row := range docTable(t, doc, "action", "body", "typed RPC") {
		action, body, rpc := row[0], row[1], row[2]
		if !registered[action] {
			t.Errorf("the contract documents the action %q, which the server does not list", action)
		}
		delete(registered, action)
		if other, ok := typed[rpc]; ok {
			t.Errorf("actions %s and %s both name the RPC %s", other, action, rpc)
		}
		typed[rpc] = action
		m := svc.Methods().ByName(protoreflect.Name(rpc))
		if m == nil {
			t.Errorf("action %s: ControlService has no RPC %s", action, rpc)
			continue
		}
		input := m.Input()
		if body == "a `ChangeRequest`" {
			if input.Name() != "ChangeRequest" {
				t.Errorf("action %s takes a ChangeRequest; %s takes %s", action, rpc, input.Name())
			}
			continue
		}
		sh, err := parseDocShape(body)
		if err != nil {
			t.Fatalf("action %s: body %s: %v", action, body, err)
		}
		var fields []string
		for i := range input.Fields().Len() {
			fields = append(fields, string(input.Fields().Get(i).Name()))
		}
		if !slices.Equal(docSorted(sh.keys), docSorted(fields)) {
			t.Errorf("action %s: the body has the keys %v; %s's request %s has the fields %v", action, sh.keys, rpc,
				input.Name(), fields)
		}
	}
	for action := range registered {
		t.Errorf("the server lists the action %q, which the action table of %s lacks", action, protocolDoc)
	}

	methods := svc.Methods()
	seen := map[string]bool{}
	for _, row := range docTable(t, doc, "RPC", "request", "response") {
		seen[row[0]] = true
		m := methods.ByName(protoreflect.Name(row[0]))
		if m == nil {
			t.Errorf("the contract documents ControlService.%s, which the proto lacks", row[0])
			continue
		}
		response := string(m.Output().Name())
		if m.IsStreamingServer() {
			response = "stream " + response
		}
		if row[1] != string(m.Input().Name()) || row[2] != response {
			t.Errorf("ControlService.%s takes %s and returns %s; the contract says %s and %s", row[0],
				m.Input().Name(), response, row[1], row[2])
		}
		if _, ok := typed[row[0]]; !ok {
			t.Errorf("ControlService.%s is the typed form of no action in the action table", row[0])
		}
	}
	for i := range methods.Len() {
		if name := string(methods.Get(i).Name()); !seen[name] {
			t.Errorf("ControlService.%s is not in the RPC table of %s", name, protocolDoc)
		}
	}
}

// TestProtocolDocTypedResults checks that each typed RPC returns the
// fields of its action's documented JSON result, and that explain's JSON
// has over the typed Plan exactly what the contract says.
func TestProtocolDocTypedResults(t *testing.T) {
	doc := readProtocolDoc(t)
	results := docShapes(t, doc, "text results")
	svc := sluicev1.File_sluice_v1_sluice_proto.Services().ByName("ControlService")
	var planOnly []string
	for _, para := range strings.Split(doc, "\n\n") {
		if strings.HasPrefix(para, "The typed `Plan` carries less") {
			for _, s := range docmd.CodeSpans(para) {
				if s != "Plan" && s != "explain" {
					planOnly = append(planOnly, s)
				}
			}
		}
	}
	if planOnly == nil {
		t.Fatalf("%s has no paragraph on what the typed Plan lacks", protocolDoc)
	}
	for _, row := range docTable(t, doc, "action", "body", "typed RPC") {
		sh, m := results[row[0]], svc.Methods().ByName(protoreflect.Name(row[2]))
		if sh == nil || m == nil {
			t.Errorf("action %s: no documented result (%v) or no RPC %s (%v)", row[0], sh != nil, row[2], m != nil)
			continue
		}
		onlyJSON, onlyProto := docShapeVersusMessage(sh, m.Output(), row[0])
		if len(onlyProto) > 0 {
			t.Errorf("%s returns %v, which the result of the action %s lacks", row[2], onlyProto, row[0])
		}
		want := []string(nil)
		if row[0] == ActionExplain {
			want = planOnly
		}
		if !slices.Equal(slices.Compact(docSorted(onlyJSON)), slices.Compact(docSorted(want))) {
			t.Errorf("the action %s returns %v that %s lacks; the contract says %v", row[0], onlyJSON, row[2], want)
		}
	}
}

// docShapeVersusMessage returns the keys of a documented JSON shape that a
// message lacks, and the fields of the message (by path) the shape lacks.
func docShapeVersusMessage(sh *docShape, md protoreflect.MessageDescriptor, path string) (onlyJSON, onlyProto []string) {
	for _, key := range sh.keys {
		fd := md.Fields().ByName(protoreflect.Name(key))
		if fd == nil {
			onlyJSON = append(onlyJSON, key)
			continue
		}
		if inner := sh.nested[key]; inner != nil && fd.Message() != nil && !fd.IsMap() {
			j, p := docShapeVersusMessage(inner, fd.Message(), path+"."+key)
			onlyJSON, onlyProto = append(onlyJSON, j...), append(onlyProto, p...)
		}
	}
	for i := range md.Fields().Len() {
		if name := string(md.Fields().Get(i).Name()); !slices.Contains(sh.keys, name) {
			onlyProto = append(onlyProto, path+"."+name)
		}
	}
	return onlyJSON, onlyProto
}

func TestProtocolDocStartModes(t *testing.T) {
	doc := readProtocolDoc(t)
	var documented []string
	for _, row := range docTable(t, doc, "start", "the stream") {
		mode := row[0] // a cell that is one code span, or one that starts with it
		if spans := docmd.CodeSpans(row[0]); len(spans) > 0 {
			mode = spans[0]
		}
		documented = append(documented, mode)
		if strings.Contains(row[0], "(default)") && mode != feed.StartLatestFull {
			t.Errorf("the contract says %s is the default start; it is %s", mode, feed.StartLatestFull)
		}
	}
	if !slices.Equal(docSorted(documented), docSorted(feed.StartModes())) {
		t.Errorf("the contract documents the start modes %v; the server takes %v", documented, feed.StartModes())
	}
}

func TestProtocolDocLimits(t *testing.T) {
	doc := readProtocolDoc(t)
	want := map[string]struct {
		text  string
		value int
		limit int
	}{
		"a `ChangeRequest` or action body": {"1 MiB", 1 << 20, maxRequestBytes},
		"a consumer id":                    {"200 characters", 200, maxConsumerLen},
		"an encoded message":               {"under 4 MiB", 4 << 20, MaxMessageBytes},
	}
	for _, row := range docTable(t, doc, "what", "limit", "beyond it") {
		w, ok := want[row[0]]
		if !ok {
			continue
		}
		delete(want, row[0])
		if row[1] != w.text || w.value != w.limit {
			t.Errorf("the contract limits %s to %q (%d); the server to %d", row[0], row[1], w.value, w.limit)
		}
	}
	for what := range want {
		t.Errorf("the limits table of %s has no row %q", protocolDoc, what)
	}
}

func docSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
