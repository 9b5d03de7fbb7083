package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// A Decoder turns one line of an input file into a record. Decode errors
// about a field are *FieldError values; the importer adds file and line.
type Decoder interface {
	Decode(line []byte) (Record, error)
}

// Native decodes gavel's own JSONL format: one Record per line, as
// `gavel records export` writes it. Unknown fields are refused (free-form
// data belongs under meta), so that a misspelt field is not silently lost.
type Native struct{}

var _ Decoder = Native{}

type nativeWire struct {
	ID        *string           `json:"id"`
	Task      *string           `json:"task"`
	Candidate *string           `json:"candidate"`
	Reference string            `json:"reference"`
	Context   map[string]string `json:"context"`
	Group     string            `json:"group"`
	Outcome   *nativeOutcome    `json:"outcome"`
	Meta      json.RawMessage   `json:"meta"`
}

type nativeOutcome struct {
	Label  string `json:"label"`
	Source string `json:"source"`
	Status string `json:"status"`
	Reason string `json:"reason"`
	At     string `json:"at"`
}

// Decode implements Decoder.
func (Native) Decode(line []byte) (Record, error) {
	var w nativeWire
	if err := decodeStrict(line, &w); err != nil {
		return Record{}, err
	}
	switch {
	case w.ID == nil:
		return Record{}, fieldErr("id", "missing")
	case w.Task == nil:
		return Record{}, fieldErr("task", "missing")
	case w.Candidate == nil:
		return Record{}, fieldErr("candidate", "missing")
	case w.Outcome == nil:
		return Record{}, fieldErr("outcome", "missing")
	}
	r := Record{
		ID: *w.ID, Task: *w.Task, Candidate: *w.Candidate, Reference: w.Reference,
		Context: w.Context, Group: w.Group, Meta: w.Meta,
		Outcome: Outcome{Label: Label(w.Outcome.Label), Source: Source(w.Outcome.Source),
			Status: Status(w.Outcome.Status), Reason: w.Outcome.Reason},
	}
	if w.Outcome.At != "" {
		at, err := ParseTime(w.Outcome.At)
		if err != nil {
			return Record{}, fieldErr("outcome.at", "%v", err)
		}
		r.Outcome.At = at
	}
	return r, nil
}

// ParseTime reads an RFC 3339 time, the format of outcome.at.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (e.g. 2025-03-01T12:00:00Z)", s)
	}
	return t, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, and turns encoding/json's errors into ones that name the
// field.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value on the line")
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("invalid JSON: want an object, got %s", typ.Value)
		}
		return fieldErr(typ.Field, "want %s, got %s", typeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("invalid JSON: unexpected end of line")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fieldErr(strings.Trim(f, `"`), "unknown field (free-form data belongs under meta)")
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(msg, "json: "))
}

func typeName(kind string) string {
	switch kind {
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	case "ptr":
		return "a value"
	}
	return "a " + kind
}
