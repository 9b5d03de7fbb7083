// Package teacher is AutoRefine's informed teacher: one model call per
// training record that sees exactly what the judge sees plus the recorded
// outcome, and keeps the label with a justification, abstains when the
// outcome cannot be explained from those inputs (the record leaves
// calibration), or, rarely, corrects it. Its abstention rate by class is a
// product output: a teacher that abstains on most failures says the judge
// lacks inputs, not a better prompt.
package teacher

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// Action is the teacher's decision about a label.
type Action string

// The actions.
const (
	Keep    Action = "keep"
	Abstain Action = "abstain"
	Correct Action = "correct"
)

// Decision is the teacher's answer about one record.
type Decision struct {
	RecordID string `json:"record_id"`
	// Prompt is the teacher prompt version (which covers the judge inputs
	// shown); Model the teacher model.
	Prompt string `json:"prompt"`
	Model  string `json:"model"`
	Action Action `json:"action"`
	// Label is the label the record has for calibration: the recorded one,
	// or the corrected one.
	Label         record.Label `json:"label"`
	Justification string       `json:"justification"`
	// Invalid marks an answer that could not be read; the record is then
	// left out, as for an abstention, and counted apart.
	Invalid    bool   `json:"invalid,omitempty"`
	ParseError string `json:"parse_error,omitempty"`
	// Raw is an unreadable answer as it came.
	Raw string `json:"raw,omitempty"`
	Key string `json:"key"`
}

//go:embed prompts/system.tmpl
var systemPrompt string

//go:embed prompts/user.tmpl
var userPrompt string

var userTmpl = template.Must(template.New("teacher").Funcs(template.FuncMap{"fence": judge.Fence}).Parse(userPrompt))

// SchemaName names the teacher's answer schema.
const SchemaName = "teacher_decision"

var schema = &llm.Schema{Name: SchemaName, Description: "The teacher's decision about one recorded outcome.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {
    "justification": {"type": "string"},
    "decision": {"type": "string", "enum": ["keep", "abstain", "correct"]},
    "label": {"type": "string", "enum": ["pass", "fail"]}
  },
  "required": ["justification", "decision", "label"],
  "additionalProperties": false
}`)}

// Version is the teacher prompt version for a judge: the hash of the
// teacher's templates and the inputs the judge sees.
func Version(j *judge.Spec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", systemPrompt, userPrompt, strings.Join(j.Inputs, ","))
	return hex.EncodeToString(h.Sum(nil))
}

// Outcome describes a record's outcome in words for the teacher.
func Outcome(o record.Outcome) string {
	var s string
	switch o.Status {
	case record.StatusPassed:
		s = "its tests passed"
	case record.StatusFailed:
		s = "its tests failed"
	case record.StatusLanded:
		s = "reviewers landed it"
	case record.StatusAbandoned:
		s = "it was abandoned"
	case record.StatusDraft:
		s = "it was left as a draft and never reviewed"
	}
	if o.Reason != "" {
		s += fmt.Sprintf(" (reason given: %q)", o.Reason)
	}
	return s + "."
}

// Request builds the teacher's request about a record.
func Request(j *judge.Spec, model string, r *record.Record) (*llm.Request, error) {
	var b bytes.Buffer
	err := userTmpl.Execute(&b, struct {
		Shown   []judge.ShownInput
		Outcome string
		Label   record.Label
	}{j.Shown(judge.InputOf(r)), Outcome(r.Outcome), r.Outcome.Label})
	if err != nil {
		return nil, err
	}
	zero := 0.0
	return &llm.Request{Model: model, Temperature: &zero, MaxTokens: 1024, Schema: schema,
		Messages: []llm.Message{{Role: llm.System, Content: strings.TrimSpace(systemPrompt)}, {Role: llm.User, Content: strings.TrimSpace(b.String())}}}, nil
}

// Parse reads the teacher's answer.
func Parse(r *record.Record, resp *llm.Response) Decision {
	d := Decision{RecordID: r.ID, Label: r.Outcome.Label}
	if resp.Invalid {
		d.Invalid, d.Action, d.ParseError, d.Raw = true, Abstain, resp.ParseError, resp.Text
		return d
	}
	var a struct {
		Justification string `json:"justification"`
		Decision      string `json:"decision"`
		Label         string `json:"label"`
	}
	raw := resp.JSON
	if len(raw) == 0 {
		raw = json.RawMessage(resp.Text)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		d.Invalid, d.Action, d.ParseError, d.Raw = true, Abstain, err.Error(), resp.Text
		return d
	}
	d.Justification = a.Justification
	switch Action(a.Decision) {
	case Keep, Abstain:
		d.Action = Action(a.Decision)
	case Correct:
		l, err := record.ParseLabel(a.Label)
		if err != nil || l == r.Outcome.Label {
			// A "correction" to the same label is a keep.
			d.Action = Keep
			break
		}
		d.Action, d.Label = Correct, l
	default:
		d.Invalid, d.Action, d.ParseError, d.Raw = true, Abstain, fmt.Sprintf("decision %q is not keep, abstain or correct", a.Decision), string(raw)
	}
	return d
}

// Run asks the teacher about every record. Pending requests (offline) are
// counted and the others go on; the budget running out stops the run.
func Run(ctx context.Context, client llm.Client, j *judge.Spec, model string, rs []*record.Record, concurrency int, progress func(done int)) ([]Decision, int, error) {
	version := Version(j)
	out := make([]*Decision, len(rs))
	res, err := llm.ForEach(ctx, len(rs), concurrency, progress, func(ctx context.Context, i int) error {
		r := rs[i]
		req, err := Request(j, model, r)
		if err != nil {
			return fmt.Errorf("teacher on record %s: %w", r.ID, err)
		}
		key, _ := llm.Key(req)
		resp, err := client.Complete(ctx, req)
		if errors.Is(err, llm.ErrInputTooLong) {
			// No rerun mends it: an unreadable decision with its reason.
			out[i] = &Decision{RecordID: r.ID, Prompt: version, Model: model, Key: key, Label: r.Outcome.Label, Invalid: true, ParseError: llm.InputTooLong}
			return nil
		}
		if err != nil {
			return fmt.Errorf("teacher on record %s: %w", r.ID, err)
		}
		d := Parse(r, resp)
		d.Prompt, d.Model, d.Key = version, model, key
		out[i] = &d
		return nil
	})
	if err == nil && len(res.Failed) > 0 {
		err = res.Failed[0]
	}
	var ds []Decision
	for _, d := range out {
		if d != nil {
			ds = append(ds, *d)
		}
	}
	if err == nil && res.Pending == 0 {
		err = judge.Readable(model, len(ds), func(i int) (bool, string, string) { return ds[i].Invalid, ds[i].Raw, ds[i].ParseError })
	}
	return ds, res.Pending, err
}

// Stats summarises decisions.
type Stats struct {
	Records   int `json:"records"`
	Kept      int `json:"kept"`
	Abstained int `json:"abstained"`
	Corrected int `json:"corrected"`
	Invalid   int `json:"invalid"`
	// AbstainByStatus and AbstainByLabel are abstention rates (0..1) by
	// the recorded status and label.
	AbstainByStatus map[record.Status]float64 `json:"abstain_rate_by_status"`
	AbstainByLabel  map[record.Label]float64  `json:"abstain_rate_by_label"`
	// InformationGap is set when the teacher abstains on most failures.
	InformationGap bool `json:"information_gap"`
}

// InformationGapWarning is printed and reported when the teacher abstains
// on most failures.
const InformationGapWarning = "the teacher abstains on most failures: the judge cannot see why these changes fail. Give it more inputs (e.g. the reference or the test output); a better prompt will not help."

// Summarise counts decisions by action and abstention rates by class.
func Summarise(rs []*record.Record, ds []Decision) Stats {
	byID := map[string]*record.Record{}
	for _, r := range rs {
		byID[r.ID] = r
	}
	s := Stats{Records: len(ds), AbstainByStatus: map[record.Status]float64{}, AbstainByLabel: map[record.Label]float64{}}
	nStatus, nLabel := map[record.Status]int{}, map[record.Label]int{}
	for _, d := range ds {
		r := byID[d.RecordID]
		if r == nil {
			continue
		}
		if d.Invalid {
			// An unreadable answer is no decision: counted apart, never
			// as an abstention, and out of the rates.
			s.Invalid++
			continue
		}
		nStatus[r.Outcome.Status]++
		nLabel[r.Outcome.Label]++
		switch d.Action {
		case Keep:
			s.Kept++
		case Correct:
			s.Corrected++
		case Abstain:
			s.Abstained++
			s.AbstainByStatus[r.Outcome.Status]++
			s.AbstainByLabel[r.Outcome.Label]++
		}
	}
	for k, n := range nStatus {
		s.AbstainByStatus[k] /= float64(n)
	}
	for k, n := range nLabel {
		s.AbstainByLabel[k] /= float64(n)
	}
	s.InformationGap = nLabel[record.Fail] > 0 && s.AbstainByLabel[record.Fail] > 0.5
	return s
}

// KeptSet returns the records the teacher keeps (with corrected labels
// applied to copies), in their order: the training set of calibration.
func KeptSet(rs []*record.Record, ds []Decision) []*record.Record {
	byID := map[string]Decision{}
	for _, d := range ds {
		byID[d.RecordID] = d
	}
	var out []*record.Record
	for _, r := range rs {
		d, ok := byID[r.ID]
		if !ok || d.Action == Abstain {
			continue
		}
		if d.Action == Correct {
			c := *r
			c.Outcome.Label = d.Label
			out = append(out, &c)
			continue
		}
		out = append(out, r)
	}
	return out
}
