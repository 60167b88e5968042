package server

import (
	"encoding/json"
	"strconv"
)

// refsInJSON rewrites a JSON ChangeRequest whose from_snapshot or
// to_snapshot (or fromSnapshot, toSnapshot) is a string that is not a
// number, the name of a tag, into from_ref or to_ref, which protobuf's
// int64 fields cannot hold. ok is false when there is nothing to rewrite
// (the request's JSON error is then its own), or when the request also
// gives the ref field the name would go to.
func refsInJSON(b []byte) (out []byte, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	for _, f := range []struct {
		names      []string
		ref, camel string
	}{
		{[]string{"from_snapshot", "fromSnapshot"}, "from_ref", "fromRef"},
		{[]string{"to_snapshot", "toSnapshot"}, "to_ref", "toRef"},
	} {
		for _, n := range f.names {
			var name string
			if json.Unmarshal(m[n], &name) != nil {
				continue
			}
			if _, err := strconv.ParseInt(name, 10, 64); err == nil {
				continue
			}
			if _, dup := m[f.ref]; dup {
				return nil, false
			}
			if _, dup := m[f.camel]; dup {
				return nil, false
			}
			m[f.ref] = m[n]
			delete(m, n)
			ok = true
		}
	}
	if !ok {
		return nil, false
	}
	out, err := json.Marshal(m)
	return out, err == nil
}
