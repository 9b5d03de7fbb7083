package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Label is the binary outcome a judge is calibrated against.
type Label string

// The two labels. Failure is the positive class wherever gavel speaks of
// failure precision and recall.
const (
	Pass Label = "pass"
	Fail Label = "fail"
)

// Status is what happened to the change in the team's workflow.
type Status string

// The workflow statuses a record can carry.
const (
	StatusPassed    Status = "passed"    // tests ran and passed
	StatusFailed    Status = "failed"    // tests ran and failed
	StatusLanded    Status = "landed"    // a reviewer accepted the change
	StatusAbandoned Status = "abandoned" // the change was given up
	StatusDraft     Status = "draft"     // never sent for review; not a rejection
)

// Statuses lists every valid status in a stable order.
var Statuses = []Status{StatusPassed, StatusFailed, StatusLanded, StatusAbandoned, StatusDraft}

// Source says where an outcome came from.
type Source string

// The outcome sources.
const (
	SourceTests  Source = "tests"
	SourceReview Source = "review"
)

// Sentinel errors of the package.
var (
	// ErrConflict is returned when a record's ID is already stored with
	// different content. Records are immutable.
	ErrConflict = errors.New("record already exists with different content")
	// ErrNotFound is returned when a named record or split does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists is returned when a split is saved under a name in use and
	// is not to replace it.
	ErrExists = errors.New("already exists")
)

// MaxIDBytes bounds the length of a record ID.
const MaxIDBytes = 512

// Outcome is the recorded result of a record's change.
type Outcome struct {
	Label  Label     `json:"label"`
	Source Source    `json:"source"`
	Status Status    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// Record is one recorded agent output with its outcome.
type Record struct {
	ID        string            `json:"id"`
	Task      string            `json:"task"`
	Candidate string            `json:"candidate"`
	Reference string            `json:"reference,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
	Group     string            `json:"group,omitempty"`
	Outcome   Outcome           `json:"outcome"`
	// Meta is free-form JSON kept with the record. After Normalize it is
	// compact with object keys sorted, or nil.
	Meta json.RawMessage `json:"meta,omitempty"`

	// cut marks a copy whose inputs CutInputs shortened (never stored).
	cut bool
}

// CutInputs is r with every input (task, candidate, reference, each
// context entry) longer than max characters cut at its last line end
// before max, and a visible marker saying how much is not shown; r itself
// when nothing is that long (or max <= 0).
func CutInputs(r *Record, max int) *Record {
	if max <= 0 {
		return r
	}
	cut := func(s string) (string, bool) {
		if len(s) <= max {
			return s, false
		}
		end := max
		if i := strings.LastIndexByte(s[:max], '\n'); i > max/2 {
			end = i + 1
		}
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		return s[:end] + fmt.Sprintf("\n[... cut: %s characters not shown]\n", thousands(len(s)-end)), true
	}
	c := *r
	var any, was bool
	c.Task, was = cut(r.Task)
	any = any || was
	c.Candidate, was = cut(r.Candidate)
	any = any || was
	c.Reference, was = cut(r.Reference)
	any = any || was
	if len(r.Context) > 0 {
		c.Context = make(map[string]string, len(r.Context))
		for k, v := range r.Context {
			c.Context[k], was = cut(v)
			any = any || was
		}
	}
	if !any {
		return r
	}
	c.cut = true
	return &c
}

// InputsCut says whether CutInputs shortened this copy's inputs.
func (r *Record) InputsCut() bool { return r.cut }

// thousands writes n with commas: 812,344.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// FieldError is a validation error about one field of a record. Field is a
// dotted path such as "outcome.label".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "field " + e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ParseLabel reads a label written as "pass"/"fail" (any case), a JSON
// boolean spelled as text ("true"/"false"), or "1"/"0".
func ParseLabel(s string) (Label, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass", "true", "1":
		return Pass, nil
	case "fail", "false", "0":
		return Fail, nil
	}
	return "", fmt.Errorf("unknown label %q (want pass or fail, or a boolean)", s)
}

// ParseStatus reads a status name.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToLower(strings.TrimSpace(s)))
	for _, v := range Statuses {
		if st == v {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown status %q (want one of %s)", s, joinStatuses(Statuses))
}

// ParseSource reads a source name.
func ParseSource(s string) (Source, error) {
	switch src := Source(strings.ToLower(strings.TrimSpace(s))); src {
	case SourceTests, SourceReview:
		return src, nil
	}
	return "", fmt.Errorf("unknown source %q (want tests or review)", s)
}

func joinStatuses(ss []Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// LabelOf is the label a status implies: passed and landed pass; failed,
// abandoned and draft fail. A draft is counted as a failure, but it is not a
// reviewer's rejection, which is why runs can exclude drafts.
func LabelOf(s Status) Label {
	switch s {
	case StatusPassed, StatusLanded:
		return Pass
	}
	return Fail
}

// SourceOf is the source a status implies when none is given.
func SourceOf(s Status) Source {
	switch s {
	case StatusPassed, StatusFailed:
		return SourceTests
	}
	return SourceReview
}

// statusOf is the status implied by a label from a given source.
func statusOf(l Label, src Source) Status {
	switch {
	case src == SourceTests && l == Pass:
		return StatusPassed
	case src == SourceTests:
		return StatusFailed
	case l == Pass:
		return StatusLanded
	}
	return StatusAbandoned
}

// Normalize fills what can be derived (the label from the status, the
// status from the label and source, the source from the status), puts Meta
// into canonical form, and validates the result. The error, if any, is a
// *FieldError.
const maxContextKey = 64

// ValidContextKey reports whether a context key is safe to name a prompt
// input (and its fence tag): letters, digits, _ and -, at most 64.
func ValidContextKey(k string) bool {
	if k == "" || len(k) > maxContextKey {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (r *Record) Normalize() error {
	if strings.TrimSpace(r.ID) == "" {
		return fieldErr("id", "missing or empty")
	}
	if r.ID != strings.TrimSpace(r.ID) {
		return fieldErr("id", "%q has leading or trailing white space", r.ID)
	}
	if len(r.ID) > MaxIDBytes {
		return fieldErr("id", "longer than %d bytes", MaxIDBytes)
	}
	if strings.TrimSpace(r.Task) == "" {
		return fieldErr("task", "missing or empty")
	}
	for k := range r.Context {
		if strings.TrimSpace(k) == "" {
			return fieldErr("context", "empty key")
		}
		if !ValidContextKey(k) {
			return fieldErr("context", "key %q: use only letters, digits, _ and - (at most %d), since it names the input in prompts", k, maxContextKey)
		}
	}
	if len(r.Context) == 0 {
		r.Context = nil
	}
	if err := r.Outcome.normalize(); err != nil {
		return err
	}
	meta, err := CanonicalJSON(r.Meta)
	if err != nil {
		return fieldErr("meta", "%v", err)
	}
	r.Meta = meta
	for _, s := range []struct{ field, v string }{
		{"id", r.ID}, {"task", r.Task}, {"candidate", r.Candidate}, {"reference", r.Reference},
		{"group", r.Group}, {"outcome.reason", r.Outcome.Reason},
	} {
		if !utf8.ValidString(s.v) {
			return fieldErr(s.field, "invalid UTF-8")
		}
	}
	return nil
}

// Normalize checks an outcome on its own and fills in what its status
// implies (label, source), as Record.Normalize does for a record's.
func (o *Outcome) Normalize() error { return o.normalize() }

// Same reports whether two outcomes say the same thing: the same status and
// reason (the time a report carries may differ from the first's).
func (o *Outcome) Same(other *Outcome) bool {
	return o.Status == other.Status && o.Reason == other.Reason
}

// OutcomeVersion is one of a record's outcomes: version 1 is the one it was
// imported with, later ones were added when the outcome changed.
type OutcomeVersion struct {
	Version    int       `json:"version"`
	Outcome    Outcome   `json:"outcome"`
	Origin     string    `json:"origin,omitempty"`
	RecordedAt time.Time `json:"recorded_at,omitzero"`
}

// OutcomeStore keeps records' later outcomes. A record's outcome, as
// Store.Records gives it, is its latest version.
type OutcomeStore interface {
	// AddOutcome makes o the record's outcome as a new version, unless its
	// latest outcome already says the same (Outcome.Same). It answers the
	// latest version's number and whether it added one; an unknown record
	// is an error wrapping ErrNotFound.
	AddOutcome(ctx context.Context, id string, o Outcome, origin string) (version int, added bool, err error)
	// Outcomes lists a record's outcome versions, oldest first.
	Outcomes(ctx context.Context, id string) ([]OutcomeVersion, error)
}

func (o *Outcome) normalize() error {
	if o.Source != "" {
		src, err := ParseSource(string(o.Source))
		if err != nil {
			return fieldErr("outcome.source", "%v", err)
		}
		o.Source = src
	}
	if o.Label != "" && o.Label != Pass && o.Label != Fail {
		return fieldErr("outcome.label", "unknown label %q (want pass or fail)", o.Label)
	}
	switch {
	case o.Status != "":
		st, err := ParseStatus(string(o.Status))
		if err != nil {
			return fieldErr("outcome.status", "%v", err)
		}
		o.Status = st
		if o.Label == "" {
			o.Label = LabelOf(st)
		} else if o.Label != LabelOf(st) {
			return fieldErr("outcome.label", "%q contradicts status %q, which means %q", o.Label, st, LabelOf(st))
		}
		if o.Source == "" {
			o.Source = SourceOf(st)
		}
	case o.Label != "":
		if o.Source == "" {
			return fieldErr("outcome.status", "missing, and it cannot be derived from the label without outcome.source (tests or review)")
		}
		o.Status = statusOf(o.Label, o.Source)
	default:
		return fieldErr("outcome.status", "missing: give outcome.status or outcome.label")
	}
	if !o.At.IsZero() && (o.At.Year() < 1970 || o.At.Year() > 9999) {
		return fieldErr("outcome.at", "%s is outside the years 1970 to 9999", o.At.Format(time.RFC3339))
	}
	return nil
}

// CanonicalJSON returns raw in compact form with object keys sorted and
// numbers kept as written, so that equal values have equal bytes. An empty
// input or JSON null gives nil.
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: more than one value")
	}
	if v == nil {
		return nil, nil
	}
	return CompactJSON(v)
}

// CompactJSON encodes v compactly without escaping <, > and &, which are common
// in code and patches.
func CompactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Canonical returns the record's canonical JSON encoding: the form gavel
// stores, exports and hashes. The record must be normalized.
func (r *Record) Canonical() ([]byte, error) {
	return CompactJSON(r)
}

// Hash returns the hex SHA-256 of a canonical encoding.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// Diff names the top-level fields (and outcome sub-fields) in which two
// records differ, in a stable order. It is used to explain conflicts.
func Diff(a, b *Record) []string {
	var d []string
	add := func(name string, differ bool) {
		if differ {
			d = append(d, name)
		}
	}
	add("task", a.Task != b.Task)
	add("candidate", a.Candidate != b.Candidate)
	add("reference", a.Reference != b.Reference)
	add("context", !equalContext(a.Context, b.Context))
	add("group", a.Group != b.Group)
	add("outcome.label", a.Outcome.Label != b.Outcome.Label)
	add("outcome.source", a.Outcome.Source != b.Outcome.Source)
	add("outcome.status", a.Outcome.Status != b.Outcome.Status)
	add("outcome.reason", a.Outcome.Reason != b.Outcome.Reason)
	add("outcome.at", !a.Outcome.At.Equal(b.Outcome.At))
	add("meta", !bytes.Equal(a.Meta, b.Meta))
	return d
}

func equalContext(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Stats summarises a set of records.
type Stats struct {
	Total     int            `json:"total"`
	ByLabel   map[Label]int  `json:"by_label"`
	ByStatus  map[Status]int `json:"by_status"`
	BySource  map[Source]int `json:"by_source"`
	Groups    int            `json:"groups"`
	Ungrouped int            `json:"ungrouped"`
}

// StatsCounter accumulates Stats one record at a time.
type StatsCounter struct {
	s      Stats
	groups map[string]struct{}
}

// Add counts one record.
func (c *StatsCounter) Add(r *Record) {
	if c.groups == nil {
		c.groups = map[string]struct{}{}
		c.s.ByLabel = map[Label]int{Pass: 0, Fail: 0}
		c.s.ByStatus = map[Status]int{}
		c.s.BySource = map[Source]int{}
	}
	c.s.Total++
	c.s.ByLabel[r.Outcome.Label]++
	c.s.ByStatus[r.Outcome.Status]++
	c.s.BySource[r.Outcome.Source]++
	if r.Group == "" {
		c.s.Ungrouped++
	} else {
		c.groups[r.Group] = struct{}{}
	}
}

// Stats returns the totals so far.
func (c *StatsCounter) Stats() Stats {
	s := c.s
	if s.ByLabel == nil {
		s.ByLabel = map[Label]int{Pass: 0, Fail: 0}
		s.ByStatus = map[Status]int{}
		s.BySource = map[Source]int{}
	}
	s.Groups = len(c.groups)
	return s
}

// SortedKeys returns a map's keys in order, for stable printing.
func SortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
