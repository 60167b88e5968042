package server

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"
)

// The Flight session actions (SetSessionOptions, GetSessionOptions,
// CloseSession), whose bodies and results are protobuf messages. Sluice
// keeps no state between calls, so there is no session to keep: a client
// that closes its session (the ADBC Flight SQL driver does on every
// disconnect) is told it is closed, it has no options, and each option it
// sets is refused by name in the result, as the Flight protocol asks.

// sessionActions are the Flight session action types.
var sessionActions = map[string]bool{
	flight.SetSessionOptionsActionType: true,
	flight.GetSessionOptionsActionType: true,
	flight.CloseSessionActionType:      true,
}

// sessionAction answers a session action with its one result.
func sessionAction(act *flight.Action) (*flight.Result, error) {
	name := act.GetType()
	var result proto.Message
	switch name {
	case flight.CloseSessionActionType:
		if err := proto.Unmarshal(act.GetBody(), &flight.CloseSessionRequest{}); err != nil {
			return nil, badRequestf("%s: malformed CloseSessionRequest: %s", name, clipText(err.Error()))
		}
		result = &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}
	case flight.GetSessionOptionsActionType:
		if err := proto.Unmarshal(act.GetBody(), &flight.GetSessionOptionsRequest{}); err != nil {
			return nil, badRequestf("%s: malformed GetSessionOptionsRequest: %s", name, clipText(err.Error()))
		}
		result = &flight.GetSessionOptionsResult{}
	default:
		var req flight.SetSessionOptionsRequest
		if err := proto.Unmarshal(act.GetBody(), &req); err != nil {
			return nil, badRequestf("%s: malformed SetSessionOptionsRequest: %s", name, clipText(err.Error()))
		}
		res := &flight.SetSessionOptionsResult{}
		for opt := range req.GetSessionOptions() {
			if res.Errors == nil {
				res.Errors = map[string]*flight.SetSessionOptionsResultError{}
			}
			res.Errors[opt] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
		}
		result = res
	}
	body, err := proto.Marshal(result)
	if err != nil {
		return nil, err
	}
	return &flight.Result{Body: body}, nil
}
