package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// apiError is an error answered as JSON: {"error": ..., "field": ...}.
type apiError struct {
	Status int    `json:"-"`
	Msg    string `json:"error"`
	// Field names the request field at fault, when there is one.
	Field string `json:"field,omitempty"`
	// RetryAfter, in seconds, for 429 and 503.
	RetryAfter int `json:"retry_after,omitempty"`
}

func (e *apiError) Error() string { return e.Msg }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{Status: status, Msg: fmt.Sprintf(format, args...)}
}

func fieldError(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Field: field, Msg: "field " + field + ": " + fmt.Sprintf(format, args...)}
}

// writeJSON answers v with a status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errorf(http.StatusInternalServerError, "internal error: %v", err)
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gavel"`)
	}
	writeJSON(w, ae.Status, ae)
}

// decode reads a JSON request body into v strictly: one object, no unknown
// fields, within the body limit. Its errors name the problem and the field.
func decode(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type %q: send application/json", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err)
		}
		return errorf(http.StatusBadRequest, "malformed JSON: the body holds more than one JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", mbe.Limit)
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, "empty body: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &se):
		return errorf(http.StatusBadRequest, "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return errorf(http.StatusBadRequest, "the body must be a JSON object, not %s", te.Value)
		}
		return fieldError(te.Field, "want %s, got %s", typeName(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &apiError{Status: http.StatusBadRequest, Field: name, Msg: fmt.Sprintf("unknown field %q", name)}
	}
	return errorf(http.StatusBadRequest, "malformed JSON: %v", err)
}

func typeName(kind string) string {
	switch kind {
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	case "float64", "int", "int64":
		return "a number"
	}
	return "a " + kind
}
