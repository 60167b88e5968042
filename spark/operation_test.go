package spark

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	withInfo := func(code codes.Code, msg, class string) error {
		st, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{
			Reason: "org.apache.spark.sql.AnalysisException", Domain: "org.apache.spark",
			Metadata: map[string]string{"errorClass": class, "sqlState": "42P01"}})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"unknown table", withInfo(codes.Internal, "[TABLE_OR_VIEW_NOT_FOUND] no t", "TABLE_OR_VIEW_NOT_FOUND"), ErrTableNotFound},
		{"refused", withInfo(codes.Internal, "[DELTA_CHANGELOG_REQUIRES_ROW_TRACKING] ...", "DELTA_CHANGELOG_REQUIRES_ROW_TRACKING"), ErrQuery},
		{"server gone", status.Error(codes.Unavailable, "error reading from server: connection reset by peer"), ErrUnavailable},
		{"stream reset", status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: INTERNAL_ERROR"), ErrUnavailable},
		{"a JVM error without ErrorInfo", status.Error(codes.Unknown, "class X can not implement Y"), ErrQuery},
		{"cancelled", status.Error(codes.Canceled, "context canceled"), context.Canceled},
		{"not gRPC", errors.New("dial: boom"), ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err, "SELECT 1"); !errors.Is(got, tc.want) {
				t.Errorf("classify = %v, want %v", got, tc.want)
			}
		})
	}
	var e *Error
	if !errors.As(classify(withInfo(codes.Internal, "[X] msg", "X"), "q"), &e) || e.Class != "X" || e.SQLState != "42P01" {
		t.Errorf("no *Error with the class and state: %+v", e)
	}
}
