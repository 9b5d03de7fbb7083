package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gavelhq/gavel/runlog"
)

// RunList is stored runs, newest first (runs list); marshalled, a JSON
// array.
type RunList []*runlog.Run

// WriteText writes a table of the runs.
func (l RunList) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "ID\tCOMMAND\tJUDGE\tSPLIT\tRECORDS\tSTARTED\tSECONDS\tCOST")
	for _, r := range l {
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%d\t%s\t%.1f\t$%.4f\n", r.ID, SimTag(r.Simulated), r.Command, r.Judge, r.Split, r.Records,
			r.StartedAt.Local().Format("2006-01-02 15:04"), r.EndedAt.Sub(r.StartedAt).Seconds(), r.Calls.Cost)
	}
	p.flush(tw)
	return p.err
}

// RunShown is one run (runs show): marshalled, the run with its command's
// --json under "result"; as text, what its command printed.
type RunShown struct {
	ResultVersion int `json:"result_version"`
	*runlog.Run
}

// WriteText writes the run's command line, models and times, then the
// figures as its command printed them.
func (r *RunShown) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("run %s: gavel %s (%s), %s to %s, %d records\n", r.ID, r.Command, r.GavelVersion,
		r.StartedAt.Local().Format(time.DateTime), r.EndedAt.Local().Format(time.TimeOnly), r.Records)
	p.f("  command line: gavel %s\n", joinArgs(r.Args))
	for _, m := range sortedKeys(r.Models) {
		url := r.Models[m]
		if url == "" {
			url = "the provider's default URL"
		}
		p.f("  model %s at %s\n", m, url)
	}
	if len(r.Prompts) > 0 {
		p.f("  prompt versions: %s\n", joinShort(r.Prompts))
	}
	p.f("  calls: %d requests, %d from the cache, %d sent, %d input and %d output tokens, $%.4f\n\n",
		r.Calls.Requests, r.Calls.CacheHits, r.Calls.Sent, r.Calls.Usage.InputTokens, r.Calls.Usage.OutputTokens, r.Calls.Cost)
	p.f("%s", r.Text)
	return p.err
}

// RunRecords is a page of a run's records (runs records).
type RunRecords struct {
	ResultVersion int    `json:"result_version"`
	Run           string `json:"run"`
	Role          string `json:"role,omitempty"`
	// Which is the selection (disagree, false_pass, false_fail; "" for
	// all); Total how many records it selects.
	Which   runlog.Which    `json:"which,omitempty"`
	Total   int             `json:"total"`
	Records []runlog.Record `json:"records"`
}

// ReadRunRecords reads the records of a run's role (its main one when
// f.Role is empty) that the filter selects.
func ReadRunRecords(ctx context.Context, st runlog.Store, id string, f runlog.Filter) (*RunRecords, error) {
	r, err := st.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.Role == "" && len(r.Roles) > 0 {
		f.Role = r.Roles[0]
	}
	recs, total, err := st.RunRecords(ctx, r.ID, f)
	if err != nil {
		return nil, err
	}
	return &RunRecords{ResultVersion: ResultVersion, Run: r.ID, Role: f.Role, Which: f.Which, Total: total, Records: recs}, nil
}

// WriteText writes a table: id, outcome, verdict and the first line of the
// reasoning (or of the teacher's justification).
func (r *RunRecords) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "ID\tOUTCOME\tVERDICT\tREASONING")
	for _, rec := range r.Records {
		verdict, why := string(rec.Verdict), rec.Reasoning
		if rec.Teacher != nil {
			verdict, why = "teacher "+rec.Teacher.Action, rec.Teacher.Justification
		}
		if rec.Invalid != "" {
			why = "unreadable: " + rec.Invalid
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rec.ID, rec.Outcome, verdict, FirstLine(why, 100))
	}
	p.flush(tw)
	p.f("%d of %d records (run %s, %s", len(r.Records), r.Total, r.Run, r.Role)
	if r.Which != runlog.All {
		p.f(", %s", r.Which)
	}
	p.f(")\n")
	return p.err
}

// ExportedRecord is one line of a run's export: the record with its run.
type ExportedRecord struct {
	Run string `json:"run"`
	runlog.Record
}

// ExportRun writes every record of a run, all roles, as JSONL; it returns
// how many.
func ExportRun(ctx context.Context, st runlog.Store, id string, w io.Writer) (int, error) {
	r, err := st.Run(ctx, id)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for offset := 0; ; offset += 1000 {
		recs, _, err := st.RunRecords(ctx, r.ID, runlog.Filter{Offset: offset, Limit: 1000})
		if err != nil {
			return n, err
		}
		for _, rec := range recs {
			if err := enc.Encode(ExportedRecord{Run: r.ID, Record: rec}); err != nil {
				return n, err
			}
			n++
		}
		if len(recs) < 1000 {
			return n, nil
		}
	}
}

// DiffRow is a record two runs decided differently.
type DiffRow struct {
	ID         string `json:"id"`
	Outcome    string `json:"outcome"`
	VerdictA   string `json:"verdict_a"`
	VerdictB   string `json:"verdict_b"`
	ReasoningA string `json:"reasoning_a"`
	ReasoningB string `json:"reasoning_b"`
}

// RunDiff is the records whose verdicts differ between two runs' main
// roles (runs diff).
type RunDiff struct {
	ResultVersion int       `json:"result_version"`
	A             string    `json:"a"`
	B             string    `json:"b"`
	Common        int       `json:"common"`
	Records       []DiffRow `json:"records"`
}

// DiffRuns compares the verdicts of two runs on the records both decided.
func DiffRuns(ctx context.Context, st runlog.Store, a, b string) (*RunDiff, error) {
	ra, err := ReadRunRecords(ctx, st, a, runlog.Filter{})
	if err != nil {
		return nil, err
	}
	rb, err := ReadRunRecords(ctx, st, b, runlog.Filter{})
	if err != nil {
		return nil, err
	}
	byID := map[string]runlog.Record{}
	for _, r := range rb.Records {
		byID[r.ID] = r
	}
	out := &RunDiff{ResultVersion: ResultVersion, A: ra.Run, B: rb.Run, Records: []DiffRow{}}
	for _, x := range ra.Records {
		y, ok := byID[x.ID]
		if !ok {
			continue
		}
		out.Common++
		if x.Verdict != y.Verdict {
			out.Records = append(out.Records, DiffRow{ID: x.ID, Outcome: string(x.Outcome), VerdictA: string(x.Verdict), VerdictB: string(y.Verdict),
				ReasoningA: x.Reasoning, ReasoningB: y.Reasoning})
		}
	}
	return out, nil
}

// WriteText writes each record that differs with both reasonings.
func (d *RunDiff) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%d of %d records the two runs share have different verdicts (a: %s, b: %s)\n", len(d.Records), d.Common, d.A, d.B)
	for _, r := range d.Records {
		p.f("\n%s (outcome %s): a %s, b %s\n  a: %s\n  b: %s\n", r.ID, r.Outcome, r.VerdictA, r.VerdictB, FirstLine(r.ReasoningA, 200), FirstLine(r.ReasoningB, 200))
	}
	return p.err
}
