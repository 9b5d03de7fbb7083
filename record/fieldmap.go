package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// FieldMap decodes any JSONL whose lines are objects, by a map from record
// fields to input fields, such as
//
//	task=prompt,candidate=generation,label=passed,group=task_id,id=task_id+completion_id
//
// Targets are id, task, candidate, reference, group, label, status, source,
// reason, at, context.NAME and meta. A source is an input field name (a
// dotted path reaches into nested objects); "a+b" joins several fields with
// "/" (for IDs). Strings are taken as they are, numbers and booleans as
// their JSON text; a boolean label maps true to pass and false to fail.
// Input fields the map does not use are kept under meta, unless meta itself
// is mapped.
type FieldMap struct {
	entries []mapEntry
	// Source is the outcome source for lines that do not map one (the
	// --source flag).
	Source Source
	used   map[string]bool
	meta   bool
}

var _ Decoder = (*FieldMap)(nil)

type mapEntry struct {
	target  string
	sources []string
}

// JoinSep joins the fields of an "a+b" source.
const JoinSep = "/"

var mapTargets = map[string]bool{
	"id": true, "task": true, "candidate": true, "reference": true, "group": true,
	"label": true, "status": true, "source": true, "reason": true, "at": true, "meta": true,
}

// ParseFieldMap parses a map written as comma-separated target=source pairs.
func ParseFieldMap(spec string) (*FieldMap, error) {
	fm := &FieldMap{used: map[string]bool{}}
	seen := map[string]bool{}
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		target, src, ok := strings.Cut(pair, "=")
		target, src = strings.TrimSpace(target), strings.TrimSpace(src)
		if !ok || target == "" || src == "" {
			return nil, fmt.Errorf("map entry %q: want target=field", pair)
		}
		if !mapTargets[target] && !(strings.HasPrefix(target, "context.") && len(target) > len("context.")) {
			return nil, fmt.Errorf("map entry %q: unknown target %q (want id, task, candidate, reference, group, label, status, source, reason, at, meta or context.NAME)", pair, target)
		}
		if seen[target] {
			return nil, fmt.Errorf("map entry %q: %s is mapped twice", pair, target)
		}
		seen[target] = true
		e := mapEntry{target: target}
		for _, s := range strings.Split(src, "+") {
			s = strings.TrimSpace(s)
			if s == "" {
				return nil, fmt.Errorf("map entry %q: empty field name", pair)
			}
			e.sources = append(e.sources, s)
			fm.used[strings.SplitN(s, ".", 2)[0]] = true
			fm.used[s] = true
		}
		if len(e.sources) > 1 && target != "id" && target != "group" {
			return nil, fmt.Errorf("map entry %q: only id and group can join fields with +", pair)
		}
		fm.entries = append(fm.entries, e)
	}
	for _, req := range []string{"id", "task", "candidate"} {
		if !seen[req] {
			return nil, fmt.Errorf("map: %s is not mapped (e.g. %s)", req, mapExample[req])
		}
	}
	if !seen["label"] && !seen["status"] {
		return nil, fmt.Errorf("map: neither label nor status is mapped (e.g. label=passed)")
	}
	fm.meta = seen["meta"]
	return fm, nil
}

var mapExample = map[string]string{
	"id": "id=task_id+completion_id", "task": "task=prompt", "candidate": "candidate=generation",
}

// Decode implements Decoder.
func (fm *FieldMap) Decode(line []byte) (Record, error) {
	obj, err := decodeObject(line)
	if err != nil {
		return Record{}, err
	}
	r := Record{Outcome: Outcome{Source: fm.Source}}
	for _, e := range fm.entries {
		if e.target == "label" {
			raw, ok := lookup(obj, e.sources[0])
			if !ok {
				return Record{}, fieldErr(e.sources[0], "missing (the map sends it to label)")
			}
			l, err := labelValue(raw)
			if err != nil {
				return Record{}, fieldErr(e.sources[0], "%v", err)
			}
			r.Outcome.Label = l
			continue
		}
		if e.target == "meta" {
			if raw, ok := lookup(obj, e.sources[0]); ok {
				r.Meta = raw
			}
			continue
		}
		parts := make([]string, 0, len(e.sources))
		for _, s := range e.sources {
			raw, ok := lookup(obj, s)
			if !ok {
				if optionalTarget(e.target) {
					break
				}
				return Record{}, fieldErr(s, "missing (the map sends it to %s)", e.target)
			}
			parts = append(parts, textValue(raw))
		}
		if len(parts) < len(e.sources) {
			continue
		}
		v := strings.Join(parts, JoinSep)
		if err := fm.set(&r, e.target, v); err != nil {
			return Record{}, fieldErr(e.sources[0], "%v", err)
		}
	}
	if !fm.meta {
		meta := map[string]json.RawMessage{}
		for k, v := range obj {
			if !fm.used[k] {
				meta[k] = v
			}
		}
		if len(meta) > 0 {
			b, err := CompactJSON(meta)
			if err != nil {
				return Record{}, err
			}
			r.Meta = b
		}
	}
	return r, nil
}

func optionalTarget(t string) bool {
	switch t {
	case "id", "task", "candidate", "status":
		return false
	}
	return true
}

func (fm *FieldMap) set(r *Record, target, v string) error {
	switch target {
	case "id":
		r.ID = v
	case "task":
		r.Task = v
	case "candidate":
		r.Candidate = v
	case "reference":
		r.Reference = v
	case "group":
		r.Group = v
	case "status":
		st, err := ParseStatus(v)
		if err != nil {
			return err
		}
		r.Outcome.Status = st
	case "source":
		src, err := ParseSource(v)
		if err != nil {
			return err
		}
		r.Outcome.Source = src
	case "reason":
		r.Outcome.Reason = v
	case "at":
		t, err := ParseTime(v)
		if err != nil {
			return err
		}
		r.Outcome.At = t
	default: // context.NAME
		if r.Context == nil {
			r.Context = map[string]string{}
		}
		r.Context[strings.TrimPrefix(target, "context.")] = v
	}
	return nil
}

func decodeObject(line []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := decodeStrict(line, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("invalid JSON: want an object, got null")
	}
	return obj, nil
}

// lookup finds a field by name, or by a dotted path into nested objects.
// JSON null counts as missing.
func lookup(obj map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	if raw, ok := obj[path]; ok {
		return raw, !isNull(raw)
	}
	head, rest, ok := strings.Cut(path, ".")
	if !ok {
		return nil, false
	}
	raw, ok := obj[head]
	if !ok {
		return nil, false
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(raw, &inner) != nil || inner == nil {
		return nil, false
	}
	return lookup(inner, rest)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// textValue renders a JSON value as text: strings unquoted, anything else
// as its compact JSON.
func textValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if c, err := CanonicalJSON(raw); err == nil {
		return string(c)
	}
	return string(raw)
}

func labelValue(raw json.RawMessage) (Label, error) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		if b {
			return Pass, nil
		}
		return Fail, nil
	}
	return ParseLabel(textValue(raw))
}
