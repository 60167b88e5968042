package sluice

import (
	"reflect"
	"testing"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// TestSubscribeWindow: every field a SubscribeRequest shares with a
// ChangeRequest (same name and type) reaches the stream's ChangeRequest, so
// a field added to both cannot be forgotten on the way.
func TestSubscribeWindow(t *testing.T) {
	st, ct := reflect.TypeFor[SubscribeRequest](), reflect.TypeFor[ChangeRequest]()
	shared := 0
	for i := range st.NumField() {
		f := st.Field(i)
		cf, ok := ct.FieldByName(f.Name)
		if !ok || cf.Type != f.Type {
			continue
		}
		shared++
		var req SubscribeRequest
		v := reflect.ValueOf(&req).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Slice:
			v.Set(reflect.ValueOf([]string{"x"}))
		case reflect.Pointer:
			n := int64(7)
			v.Set(reflect.ValueOf(&n))
		default:
			t.Fatalf("field %s of kind %s: extend the test", f.Name, f.Type.Kind())
		}
		got := reflect.ValueOf(req.window()).FieldByName(f.Name)
		if got.IsZero() {
			t.Errorf("SubscribeRequest.%s does not reach the stream's ChangeRequest", f.Name)
		}
	}
	if shared < 11 {
		t.Fatalf("only %d shared fields found", shared)
	}
}

// TestConsumerOptions: OnRef names the consumer's ref in an Ack and in the
// calls that take ConsumerOptions; WithProtect sets protect.
func TestConsumerOptions(t *testing.T) {
	req := &sluicev1.AckRequest{}
	for _, o := range []AckOption{OnRef("audit"), WithProtect()} {
		o.applyAck(req)
	}
	if req.GetRef() != "audit" || !req.GetProtect() {
		t.Fatalf("ack request %v", req)
	}
	if got := consumerRef([]ConsumerOption{OnRef("audit")}); got != "audit" {
		t.Fatalf("consumer ref %q", got)
	}
	if got := consumerRef(nil); got != "" {
		t.Fatalf("consumer ref without options %q, want the main branch", got)
	}
}
