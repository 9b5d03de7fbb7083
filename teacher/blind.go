package teacher

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// The label-blind check: before a teacher is shown a record's outcome it
// is asked, in a request of its own, to predict the outcome from the
// judge's inputs alone. A "keep" of a label the same teacher would not
// have predicted blind is an explanation found for a label it was shown:
// a measurable rationalisation.

//go:embed prompts/blind_system.tmpl
var blindSystemPrompt string

//go:embed prompts/blind_user.tmpl
var blindUserPrompt string

var blindTmpl = template.Must(template.New("blind").Funcs(template.FuncMap{"fence": judge.Fence}).Parse(blindUserPrompt))

// BlindSchemaName names the blind prediction's answer schema.
const BlindSchemaName = "teacher_blind_prediction"

var blindSchema = &llm.Schema{Name: BlindSchemaName, Description: "The teacher's prediction of a change's outcome, without seeing it.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {
    "justification": {"type": "string"},
    "prediction": {"type": "string", "enum": ["pass", "fail"]}
  },
  "required": ["justification", "prediction"],
  "additionalProperties": false
}`)}

// BlindRequest asks a teacher to predict a record's outcome from the
// judge's inputs alone: nothing of the outcome, its status or reason is
// in it.
func BlindRequest(j *judge.Spec, model string, r *record.Record) (*llm.Request, error) {
	var b bytes.Buffer
	if err := blindTmpl.Execute(&b, struct{ Shown []judge.ShownInput }{j.Shown(judge.InputOf(r))}); err != nil {
		return nil, err
	}
	zero := 0.0
	return &llm.Request{Model: model, Temperature: &zero, MaxTokens: 1024, Schema: blindSchema,
		Messages: []llm.Message{{Role: llm.System, Content: strings.TrimSpace(blindSystemPrompt)}, {Role: llm.User, Content: strings.TrimSpace(b.String())}}}, nil
}

// Prediction is a teacher's blind prediction about one record.
type Prediction struct {
	RecordID      string       `json:"record_id"`
	Model         string       `json:"model"`
	Label         record.Label `json:"label,omitempty"`
	Justification string       `json:"justification,omitempty"`
	Invalid       bool         `json:"invalid,omitempty"`
}

// ParseBlind reads a blind prediction.
func ParseBlind(r *record.Record, model string, resp *llm.Response) Prediction {
	p := Prediction{RecordID: r.ID, Model: model}
	if resp.Invalid {
		p.Invalid = true
		return p
	}
	var a struct {
		Justification string `json:"justification"`
		Prediction    string `json:"prediction"`
	}
	raw := resp.JSON
	if len(raw) == 0 {
		raw = json.RawMessage(resp.Text)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		p.Invalid = true
		return p
	}
	l, err := record.ParseLabel(a.Prediction)
	if err != nil {
		p.Invalid = true
		return p
	}
	p.Label, p.Justification = l, a.Justification
	return p
}

// RunBlind asks a teacher for its blind prediction about every record.
// Pending requests (offline) are counted and the others go on.
func RunBlind(ctx context.Context, client llm.Client, j *judge.Spec, model string, rs []*record.Record, concurrency int, progress func(done int)) ([]Prediction, int, error) {
	out := make([]*Prediction, len(rs))
	res, err := llm.ForEach(ctx, len(rs), concurrency, progress, func(ctx context.Context, i int) error {
		req, err := BlindRequest(j, model, rs[i])
		if err != nil {
			return fmt.Errorf("blind teacher on record %s: %w", rs[i].ID, err)
		}
		resp, err := client.Complete(ctx, req)
		if errors.Is(err, llm.ErrInputTooLong) {
			out[i] = &Prediction{RecordID: rs[i].ID, Model: model, Invalid: true}
			return nil
		}
		if err != nil {
			return fmt.Errorf("blind teacher on record %s: %w", rs[i].ID, err)
		}
		p := ParseBlind(rs[i], model, resp)
		out[i] = &p
		return nil
	})
	if err == nil && len(res.Failed) > 0 {
		err = res.Failed[0]
	}
	var ps []Prediction
	for _, p := range out {
		if p != nil {
			ps = append(ps, *p)
		}
	}
	return ps, res.Pending, err
}

// BlindStats is the label-blind check of one teacher.
type BlindStats struct {
	Model string `json:"model"`
	// Predicted counts records with a readable blind prediction;
	// Contrary those whose prediction differs from the recorded label.
	Predicted int `json:"predicted"`
	Contrary  int `json:"contrary"`
	// Rationalised counts the contrary records the teacher kept when it
	// was shown the label; RationalisationRate is Rationalised/Contrary
	// (how often it explains a label it would not have predicted), with a
	// Wilson interval.
	Rationalised        int            `json:"rationalised"`
	RationalisationRate metrics.Figure `json:"rationalisation_rate"`
	// ByLabel and ByStatus are the rate by recorded label and status.
	ByLabel  map[record.Label]metrics.Figure  `json:"rationalisation_rate_by_label"`
	ByStatus map[record.Status]metrics.Figure `json:"rationalisation_rate_by_status"`
	// KeptContrary is the share of the teacher's keeps that explain a
	// label it would not have predicted.
	KeptContrary metrics.Figure `json:"kept_contrary_share"`
}

// SummariseBlind compares a teacher's blind predictions with its informed
// decisions about the same records.
func SummariseBlind(rs []*record.Record, model string, preds []Prediction, ds []Decision, level float64) BlindStats {
	st := BlindStats{Model: model, ByLabel: map[record.Label]metrics.Figure{}, ByStatus: map[record.Status]metrics.Figure{}}
	pred := map[string]Prediction{}
	for _, p := range preds {
		pred[p.RecordID] = p
	}
	dec := map[string]Decision{}
	for _, d := range ds {
		dec[d.RecordID] = d
	}
	type kn struct{ k, n int }
	byLabel, byStatus := map[record.Label]*kn{}, map[record.Status]*kn{}
	keeps, keptContrary := 0, 0
	for _, r := range rs {
		p, ok := pred[r.ID]
		d, okD := dec[r.ID]
		if !ok || p.Invalid || !okD {
			continue
		}
		st.Predicted++
		kept := d.Action == Keep && !d.Invalid
		if kept {
			keeps++
		}
		if p.Label == r.Outcome.Label {
			continue
		}
		st.Contrary++
		if byLabel[r.Outcome.Label] == nil {
			byLabel[r.Outcome.Label] = &kn{}
		}
		if byStatus[r.Outcome.Status] == nil {
			byStatus[r.Outcome.Status] = &kn{}
		}
		byLabel[r.Outcome.Label].n++
		byStatus[r.Outcome.Status].n++
		if kept {
			st.Rationalised++
			keptContrary++
			byLabel[r.Outcome.Label].k++
			byStatus[r.Outcome.Status].k++
		}
	}
	rate := func(k, n int) metrics.Figure {
		if n == 0 {
			return metrics.Figure{Value: metrics.Undef("no records"), Undefined: "no records"}
		}
		iv := metrics.Wilson(k, n, level)
		return metrics.Figure{Value: metrics.Def(float64(k) / float64(n)), CI: &iv}
	}
	st.RationalisationRate = rate(st.Rationalised, st.Contrary)
	st.KeptContrary = rate(keptContrary, keeps)
	for _, l := range sortedKeys(byLabel) {
		st.ByLabel[l] = rate(byLabel[l].k, byLabel[l].n)
	}
	for _, s := range sortedKeys(byStatus) {
		st.ByStatus[s] = rate(byStatus[s].k, byStatus[s].n)
	}
	return st
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
