package deploy

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an application error: what the caller did or can do
// about it. The server maps codes to HTTP statuses, the CLI to exit codes.
type Code string

// The codes.
const (
	// Invalid: the request is wrong (a missing field, a bad value).
	Invalid Code = "invalid"
	// NotFound: what the request names does not exist.
	NotFound Code = "not_found"
	// Conflict: the request contradicts the stored state (an id reused
	// with other content, an active version that changed meanwhile, a gate
	// that refused).
	Conflict Code = "conflict"
	// Unauthenticated: no valid credentials.
	Unauthenticated Code = "unauthenticated"
	// Forbidden: valid credentials that do not allow the request.
	Forbidden Code = "forbidden"
	// Unavailable: the service cannot answer now (the model budget, a
	// failing provider, an offline service); worth a retry.
	Unavailable Code = "unavailable"
	// Timeout: the model did not answer in time.
	Timeout Code = "timeout"
	// Upstream: the model provider answered with an error.
	Upstream Code = "upstream"
	// Canceled: the caller went away.
	Canceled Code = "canceled"
)

// Error is an application error: its message is meant for the person who
// asked, in words, and is safe to show them.
type Error struct {
	Code Code
	// Field names the request field at fault, when there is one.
	Field string
	Msg   string
	// RetryAfter suggests when to try again (Unavailable).
	RetryAfter time.Duration
	// Err is the cause, for errors.Is (ErrGateRefused, ErrActiveChanged).
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf makes an application error with a code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// FieldErrorf is an Invalid error about one field of a request; its
// message names the field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Field: field, Msg: "field " + field + ": " + fmt.Sprintf(format, args...)}
}

// ErrorCode is the code of an application error in err's chain, or ""
// when err is not one (an internal error, whose text is not for clients).
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
