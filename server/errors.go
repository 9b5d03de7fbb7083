package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gavelhq/gavel/deploy"
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

// statusOf is the HTTP status of an application error's code.
var statusOf = map[deploy.Code]int{
	deploy.Invalid:         http.StatusBadRequest,
	deploy.NotFound:        http.StatusNotFound,
	deploy.Conflict:        http.StatusConflict,
	deploy.Unauthenticated: http.StatusUnauthorized,
	deploy.Forbidden:       http.StatusForbidden,
	deploy.Unavailable:     http.StatusServiceUnavailable,
	deploy.Timeout:         http.StatusGatewayTimeout,
	deploy.Upstream:        http.StatusBadGateway,
	deploy.Canceled:        499,
}

// clientError is err as the client may see it: an HTTP error or an
// application error (its code mapped to a status), else nil: an internal
// error, whose text is for the server's log only.
func clientError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var de *deploy.Error
	if errors.As(err, &de) {
		status, ok := statusOf[de.Code]
		if !ok {
			status = http.StatusBadRequest
		}
		return &apiError{Status: status, Msg: de.Msg, Field: de.Field, RetryAfter: int(math.Ceil(de.RetryAfter.Seconds()))}
	}
	return nil
}

// Status is the HTTP status the server answers err with (500 for an
// internal error).
func Status(err error) int {
	if ae := clientError(err); ae != nil {
		return ae.Status
	}
	return http.StatusInternalServerError
}

// internalError is the answer to an error the client is not told about:
// an id that the server's log carries with the cause.
func internalError(log *slog.Logger, where string, err error) *apiError {
	b := make([]byte, 6)
	rand.Read(b)
	id := hex.EncodeToString(b)
	log.Error("internal error", "where", where, "error_id", id, "err", err)
	return errorf(http.StatusInternalServerError, "internal error (id %s: the server's log has the cause)", id)
}

func writeError(w http.ResponseWriter, err error) {
	ae := clientError(err)
	if ae == nil {
		// Only reached with an error not logged by the caller.
		ae = errorf(http.StatusInternalServerError, "internal error")
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
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	// JSON decoding would replace bytes that are not UTF-8 without a
	// word: refuse them, naming where they are.
	if !utf8.Valid(body) {
		if field := badUTF8Field(body); field != "" {
			return fieldError(field, "is not valid UTF-8")
		}
		return errorf(http.StatusBadRequest, "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
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

// badUTF8Field walks a JSON body's tokens and names the field (as
// a.b.c) of the first string whose bytes are not UTF-8, or "".
func badUTF8Field(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		object bool
		key    string
		want   bool // the next string in an object is a key
	}
	var stack []level
	path := func() string {
		var parts []string
		for _, l := range stack {
			if l.object && l.key != "" {
				parts = append(parts, l.key)
			}
		}
		return strings.Join(parts, ".")
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		end := dec.InputOffset()
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{object: true, want: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].want = true
				}
			}
			continue
		case string:
			isKey := top >= 0 && stack[top].object && stack[top].want
			if !utf8.Valid(body[start:end]) {
				return path() // a key's own bytes: its object's path
			}
			if isKey {
				stack[top].key, stack[top].want = t, false
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].want = true
		}
	}
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
