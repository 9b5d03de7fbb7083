package run

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/teacher"
)

// Result is a use case's typed result: marshalled, the --json output;
// written as text, what the command prints.
type Result interface{ WriteText(io.Writer) error }

// Loggable is a result that knows its run: RunLog describes it (its
// judge, prompt versions, models, split and roles) and the records it
// decided about; the command line and times are the caller's.
type Loggable interface {
	RunLog() (*runlog.Run, []runlog.Record)
}

// NewRunID is a run's id: its start time to the second and a random
// suffix, so that ids sort by time.
func NewRunID(t time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// SaveRun keeps a result's run: meta carries the command, its command
// line (redacted here), gavel's version, the times, the calls and the
// models' base URLs; the result gives the rest (Loggable), its --json and
// its text.
func SaveRun(ctx context.Context, st runlog.Store, res Result, meta runlog.Run) (*runlog.Run, error) {
	l, recs := &runlog.Run{}, []runlog.Record(nil)
	if lg, ok := res.(Loggable); ok {
		l, recs = lg.RunLog()
	}
	l.ID, l.Command, l.Args, l.GavelVersion = NewRunID(meta.StartedAt), meta.Command, runlog.Redact(meta.Args), meta.GavelVersion
	l.StartedAt, l.EndedAt, l.Calls, l.Simulated = meta.StartedAt, meta.EndedAt, meta.Calls, meta.Simulated
	if l.Models == nil {
		l.Models = map[string]string{}
	}
	for m, u := range meta.Models {
		l.Models[m] = u
	}
	var err error
	if l.Result, err = json.Marshal(res); err != nil {
		return nil, err
	}
	// A result that says it is simulated makes the run so.
	var sim struct {
		Simulated bool `json:"simulated"`
	}
	if json.Unmarshal(l.Result, &sim) == nil && sim.Simulated {
		l.Simulated = true
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		return nil, err
	}
	l.Text = text.String()
	return l, st.SaveRun(ctx, l, recs)
}

// verdictRecords are the records with one prompt's verdicts, decided at
// threshold (rubric judges; 0 for the judge's own).
func verdictRecords(role string, s *judge.Spec, rs []*record.Record, vs map[string]judge.Verdict, threshold int) []runlog.Record {
	if threshold == 0 {
		threshold = s.PassThreshold()
	}
	out := make([]runlog.Record, 0, len(rs))
	for _, r := range rs {
		lr := runlog.Record{ID: r.ID, Role: role, Outcome: r.Outcome.Label, Status: r.Outcome.Status, Cut: r.InputsCut()}
		if v, ok := vs[r.ID]; ok {
			score := v.Score
			lr.Verdict, lr.Prompt, lr.Reasoning, lr.Score, lr.Checks, lr.Scores, lr.Invalid =
				v.Decide(s.Kind, threshold), v.Prompt, v.Reasoning, &score, v.Checks, v.Scores, v.ParseError
		}
		out = append(out, lr)
	}
	return out
}

// teacherRecords are the records with the teacher's decisions and, where
// asked, its label-blind predictions.
func teacherRecords(role string, rs []*record.Record, ds []teacher.Decision, preds []teacher.Prediction) []runlog.Record {
	byID := map[string]teacher.Decision{}
	for _, d := range ds {
		byID[d.RecordID] = d
	}
	blind := map[string]teacher.Prediction{}
	for _, p := range preds {
		blind[p.RecordID] = p
	}
	out := make([]runlog.Record, 0, len(rs))
	for _, r := range rs {
		lr := runlog.Record{ID: r.ID, Role: role, Outcome: r.Outcome.Label, Status: r.Outcome.Status, Cut: r.InputsCut()}
		if d, ok := byID[r.ID]; ok {
			action := string(d.Action)
			if d.Invalid {
				action, lr.Invalid = "unreadable", d.ParseError
			}
			lr.Teacher = &runlog.Teacher{Model: d.Model, Action: action, Label: d.Label, Justification: d.Justification}
		}
		if p, ok := blind[r.ID]; ok && !p.Invalid {
			lr.Blind = &runlog.Blind{Model: p.Model, Predicted: p.Label, Reason: p.Justification}
		}
		out = append(out, lr)
	}
	return out
}

// RunLog implements Loggable: the verdicts of the judged records.
func (r *JudgeResult) RunLog() (*runlog.Run, []runlog.Record) {
	return &runlog.Run{Judge: r.Judge, Prompts: []string{r.Prompt}, Models: map[string]string{r.Model: ""}, Split: r.Part, Roles: []string{"judge"}},
		verdictRecords("judge", r.Spec, r.Judged, r.Verdicts, 0)
}

// RunLog implements Loggable: the verdicts at the evaluation's threshold,
// then those of the compared judge (or the original version).
func (r *EvalResult) RunLog() (*runlog.Run, []runlog.Record) {
	l := &runlog.Run{Judge: r.Judge, Prompts: []string{r.Prompt}, Models: map[string]string{r.Model: ""}, Split: r.Split, Roles: []string{"eval"}}
	recs := verdictRecords("eval", r.spec, r.judged, r.verdicts, r.Threshold)
	if r.other != nil {
		role := "compare: " + r.other.Name
		if r.Transfer != nil {
			role = "original"
		}
		l.Prompts, l.Roles = append(l.Prompts, r.other.Version()), append(l.Roles, role)
		recs = append(recs, verdictRecords(role, r.other, r.judged, r.otherVerdicts, 0)...)
	}
	return l, recs
}

// RunLog implements Loggable: the teacher's decisions.
func (r *TeachResult) RunLog() (*runlog.Run, []runlog.Record) {
	l := &runlog.Run{Models: map[string]string{r.Model: ""}, Split: r.Part, Roles: []string{"teacher"}}
	if r.Judge != nil {
		l.Judge, l.Prompts = r.Judge.Name, []string{r.Judge.Version()}
	}
	return l, teacherRecords("teacher", r.Taught, r.Decisions, nil)
}

// RunLog implements Loggable: the teacher's decisions on train (with the
// label-blind predictions), then the test verdicts of the selected prompt
// and of the original.
func (r *CalibrateResult) RunLog() (*runlog.Run, []runlog.Record) {
	res := r.Result
	l := &runlog.Run{Judge: res.Judge, Split: r.Split, Models: map[string]string{}, Roles: []string{"test: calibrated", "test: original", "train: teacher"}}
	for _, v := range res.Versions {
		l.Prompts = append(l.Prompts, v.Hash)
	}
	l.Models[res.Original.Model] = ""
	sel := res.SelectedSpec()
	orig := res.Versions[0].Spec
	recs := verdictRecords("test: calibrated", sel, res.Test, res.CalibratedVerdicts, 0)
	recs = append(recs, verdictRecords("test: original", orig, res.Test, res.OriginalVerdicts, 0)...)
	recs = append(recs, teacherRecords("train: teacher", res.Train, res.Decisions, res.Predictions)...)
	for _, d := range res.Decisions {
		l.Models[d.Model] = ""
	}
	l.Detail, _ = json.Marshal(res)
	return l, recs
}

// RunLog implements Loggable: each evaluation (the judge's first) is a
// role, each program a record with its known and predicted scores.
func (r *BenchRunResult) RunLog() (*runlog.Run, []runlog.Record) {
	l := &runlog.Run{Split: r.Bench}
	var recs []runlog.Record
	n := len(r.Evaluations)
	var order []int // the judge, evaluated last, first
	if r.verdicts != nil {
		order = append(order, n-1)
	}
	for i := range n {
		if r.verdicts == nil || i < n-1 {
			order = append(order, i)
		}
	}
	for _, i := range order {
		e := r.Evaluations[i]
		l.Roles = append(l.Roles, e.Name)
		for j, p := range r.progs {
			known, pred := p.Score, r.preds[i][j]
			lr := runlog.Record{ID: p.ID, Role: e.Name, Outcome: record.Fail, Known: &known, Program: jsonOf(p)}
			if known >= bench.WorksScore {
				lr.Outcome = record.Pass
			}
			if !math.IsNaN(pred) {
				lr.Score, lr.Verdict = &pred, judge.Fail
				if pred >= bench.WorksScore {
					lr.Verdict = judge.Pass
				}
			} else {
				lr.Verdict = judge.Invalid
			}
			if v, ok := r.verdicts[p.ID]; ok && i == n-1 {
				lr.Prompt, lr.Reasoning, lr.Invalid = v.Prompt, v.Reasoning, v.ParseError
			}
			recs = append(recs, lr)
		}
	}
	return l, recs
}

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// WriteCalls writes a run's model calls in one line (a command's last
// line on stderr), and a warning of usage no call can have.
func WriteCalls(w io.Writer, st llm.RunStats) {
	fmt.Fprintf(w, "model calls: %d requests, %d from the cache, %d sent (%d retries, %d repairs), %d shared with an identical request, %d input and %d output tokens, %s\n",
		st.Requests, st.CacheHits, st.Sent, st.Retries, st.Repairs, st.Shared, st.Usage.InputTokens, st.Usage.OutputTokens, llm.Dollars(st.Cost))
	if st.BadUsage > 0 {
		fmt.Fprintf(w, "warning: %d answer(s) reported token usage no call can have (negative or over %d); they are kept but not costed\n", st.BadUsage, llm.MaxUsageTokens)
	}
}
