package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/repoctx"
)

// SkippedLine is an input line an import left out.
type SkippedLine struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// IngestResult is what an import of record files did; marshalled, it is
// ingest's --json output.
type IngestResult struct {
	ResultVersion int `json:"result_version"`
	*record.ImportResult
	Skipped []SkippedLine `json:"skipped"`
	// Total is the store's records after the import.
	Total int `json:"total_records"`
	// Files, with --repo, counts the records given context.files.
	ContextFiles *RepoFiles `json:"context_files,omitempty"`
}

// RepoFiles counts what ingest --repo added: records given the files
// their diff touches, records whose diff touches no file that existed
// before it, and files a diff names that its base commit lacks.
type RepoFiles struct {
	Repo    string `json:"repo"`
	Added   int    `json:"records_with_files"`
	Without int    `json:"records_without"`
	Missing int    `json:"files_missing"`
}

// Repo is where ingest --repo reads the files a change touches: a local
// clone, the revision of records whose meta names no base commit
// (default HEAD), and the budget of the files' text.
type Repo struct {
	Dir, Base string
	MaxChars  int
}

// Ingest imports record files in one transaction: nothing is kept when
// one fails (opt.SkipInvalid leaves invalid lines out instead).
func Ingest(ctx context.Context, st record.Store, dec record.Decoder, files []string, opt record.ImportOptions, repo Repo) (*IngestResult, error) {
	var adder *repoctx.Adder
	if repo.Dir != "" {
		g, err := repoctx.OpenGit(ctx, repo.Dir)
		if err != nil {
			return nil, deploy.FieldErrorf("repo", "%v", err)
		}
		defer g.Close()
		adder = &repoctx.Adder{Src: g, Resolve: g.Resolve, Base: repo.Base, MaxChars: repo.MaxChars}
		opt.Enrich = adder.Add
	}
	var res *record.ImportResult
	err := st.Import(ctx, func(w record.Writer) error {
		var err error
		res, err = record.Import(ctx, w, dec, files, opt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %w (nothing was imported)", err)
	}
	out := &IngestResult{ResultVersion: ResultVersion, ImportResult: res, Skipped: []SkippedLine{}}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, SkippedLine{File: s.File, Line: s.Line, Error: s.Err.Error()})
	}
	var counter record.StatsCounter
	if err := st.Records(ctx, record.Filter{}, func(r *record.Record) error { counter.Add(r); return nil }); err != nil {
		return nil, err
	}
	out.Total = counter.Stats().Total
	if adder != nil {
		out.ContextFiles = &RepoFiles{Repo: repo.Dir, Added: adder.Added, Without: adder.Without, Missing: adder.Missing}
	}
	return out, nil
}

// WriteText says what was imported.
func (r *IngestResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "imported %d new records, %d already present, %d skipped, from %d lines in %d file(s); the store holds %d records\n",
		r.Inserted, r.Unchanged, len(r.Skipped), r.Lines, len(r.Files), r.Total)
	if c := r.ContextFiles; err == nil && c != nil {
		_, err = fmt.Fprintf(w, "context.files from %s: %d records given the files their change touches, %d whose change touches none that existed, %d files not at the base commit\n",
			c.Repo, c.Added, c.Without, c.Missing)
	}
	return err
}

// Warnings name the lines left out.
func (r *IngestResult) Warnings() []string {
	var ws []string
	for _, s := range r.Skipped {
		ws = append(ws, fmt.Sprintf("skipped %s:%d: %s", s.File, s.Line, s.Error))
	}
	return ws
}

// PartSummary is one part of a split.
type PartSummary struct {
	Records int `json:"records"`
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Groups  int `json:"groups"`
}

// SplitResult is a split's parameters and parts; marshalled, it is split
// and split show's --json output.
type SplitResult struct {
	ResultVersion int                         `json:"result_version"`
	Name          string                      `json:"name"`
	Spec          record.SplitSpec            `json:"spec"`
	Total         int                         `json:"total"`
	Parts         map[record.Part]PartSummary `json:"parts"`
}

// MakeSplit makes a split of the stored records (replacing one of the
// same name only when replace is set) and describes it.
//
// A part given a share that would hold fewer than 10 records, or no
// record of one label, is refused unless allowSmall: no figure measured on
// it could be trusted.
func MakeSplit(ctx context.Context, st record.Store, spec record.SplitSpec, replace, allowSmall bool) (*SplitResult, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var members []record.Member
	err := st.Records(ctx, record.Filter{ExcludeStatus: spec.ExcludeStatus}, func(r *record.Record) error {
		members = append(members, record.MemberOf(r))
		return nil
	})
	if err != nil {
		return nil, err
	}
	s, err := record.MakeSplit(members, spec)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", spec.Name, err)
	}
	if !allowSmall {
		if err := tooSmall(spec, members, s.Assign); err != nil {
			return nil, fmt.Errorf("split %s: %w; give --allow-small to make it anyway", spec.Name, err)
		}
	}
	if err := st.SaveSplit(ctx, s, replace); errors.Is(err, record.ErrExists) {
		return nil, fmt.Errorf("%w: give --replace to make it anew", err)
	} else if err != nil {
		return nil, err
	}
	return ShowSplit(ctx, st, spec.Name)
}

// tooSmall says which part of a split, among those given a share, holds
// fewer than 10 records or no record of one label.
func tooSmall(spec record.SplitSpec, members []record.Member, assign map[string]record.Part) error {
	share := map[record.Part]float64{record.Train: spec.Train, record.Val: spec.Val, record.Test: spec.Test}
	count := map[record.Part]map[record.Label]int{}
	for _, m := range members {
		p := assign[m.ID]
		if count[p] == nil {
			count[p] = map[record.Label]int{}
		}
		count[p][m.Label]++
	}
	for _, p := range record.Parts {
		if share[p] <= 0 {
			continue
		}
		pass, fail := count[p][record.Pass], count[p][record.Fail]
		switch {
		case pass+fail < 10:
			return fmt.Errorf("part %s would hold %d records (%d pass, %d fail), fewer than 10", p, pass+fail, pass, fail)
		case pass == 0 || fail == 0:
			return fmt.Errorf("part %s would hold no record of one label (%d pass, %d fail): no agreement can be measured on it", p, pass, fail)
		}
	}
	return nil
}

// ShowSplit describes a stored split: records, labels and groups by part.
func ShowSplit(ctx context.Context, st record.Store, name string) (*SplitResult, error) {
	s, err := st.Split(ctx, name)
	if err != nil {
		return nil, err
	}
	out := &SplitResult{ResultVersion: ResultVersion, Name: name, Spec: s.Spec, Parts: map[record.Part]PartSummary{}}
	groups := map[record.Part]map[string]bool{}
	for _, p := range record.Parts {
		groups[p] = map[string]bool{}
		out.Parts[p] = PartSummary{}
	}
	err = st.Records(ctx, record.Filter{Split: name}, func(r *record.Record) error {
		p := s.Assign[r.ID]
		ps := out.Parts[p]
		ps.Records++
		if r.Outcome.Label == record.Pass {
			ps.Pass++
		} else {
			ps.Fail++
		}
		if r.Group != "" && !groups[p][r.Group] {
			groups[p][r.Group] = true
			ps.Groups++
		}
		out.Parts[p] = ps
		out.Total++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DescribeSplit is a split's parameters in words.
func DescribeSplit(s record.SplitSpec) string {
	how := fmt.Sprintf("seed %d, stratified by label, groups kept whole", s.Seed)
	if s.ByTime {
		how = "by time, oldest in train, groups kept whole"
	}
	d := fmt.Sprintf("train %.2f, val %.2f, test %.2f; %s", s.Train, s.Val, s.Test, how)
	if len(s.ExcludeStatus) > 0 {
		d += fmt.Sprintf("; without %v", s.ExcludeStatus)
	}
	return d
}

// WriteText writes the split's parameters and a table of its parts.
func (r *SplitResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("split %s: %d records; %s\n", r.Name, r.Total, DescribeSplit(r.Spec))
	tw := p.table(true)
	fmt.Fprintln(tw, "part\trecords\tpass\tfail\tgroups\t")
	for _, part := range record.Parts {
		ps := r.Parts[part]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", part, ps.Records, ps.Pass, ps.Fail, ps.Groups)
	}
	p.flush(tw)
	return p.err
}

// SplitList is the stored splits (split list); marshalled, a JSON array.
type SplitList []record.SplitSpec

// WriteText writes one split a line.
func (l SplitList) WriteText(w io.Writer) error {
	p := &printer{w: w}
	for _, s := range l {
		p.f("%s\t%s\n", s.Name, DescribeSplit(s))
	}
	return p.err
}

// RecordStatsResult is the records' totals (records stats).
type RecordStatsResult struct {
	ResultVersion int `json:"result_version"`
	record.Stats
}

// RecordStats counts the records a filter selects.
func RecordStats(ctx context.Context, st record.Store, f record.Filter) (*RecordStatsResult, error) {
	var c record.StatsCounter
	if err := st.Records(ctx, f, func(r *record.Record) error { c.Add(r); return nil }); err != nil {
		return nil, err
	}
	return &RecordStatsResult{ResultVersion: ResultVersion, Stats: c.Stats()}, nil
}

// WriteText writes the totals.
func (r *RecordStatsResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintf(tw, "records\t%d\n", r.Total)
	fmt.Fprintf(tw, "label\t%s\n", Counts(r.ByLabel, "-"))
	fmt.Fprintf(tw, "status\t%s\n", Counts(r.ByStatus, "-"))
	fmt.Fprintf(tw, "source\t%s\n", Counts(r.BySource, "-"))
	fmt.Fprintf(tw, "groups\t%d (and %d records without a group)\n", r.Groups, r.Ungrouped)
	p.flush(tw)
	return p.err
}

// ImportResult is what an import from a code host did (import github,
// import gerrit): the records and outcome versions it stored and, for
// GitHub, the requests it made.
type ImportResult struct {
	ResultVersion int `json:"result_version"`
	*codehost.GitHubResult
	// Repository is GitHub's OWNER/NAME; Server, Gerrit's URL.
	Repository  string `json:"repository,omitempty"`
	Server      string `json:"server,omitempty"`
	Requests    int64  `json:"requests"`
	Conditional int64  `json:"conditional_requests"`
	NotModified int64  `json:"not_modified"`
}

// WriteText writes the counts.
func (r *ImportResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	if r.Server != "" {
		p.f("%s: %d changes, %d matched: %d records new, %d unchanged, %d new outcome versions, %d revisions\n",
			r.Server, r.PullRequests, r.Matched, r.Inserted, r.Unchanged, r.NewOutcomes, r.Revisions)
		return p.err
	}
	p.f("%s: %d pull requests, %d matched: %d records new, %d unchanged, %d new outcome versions, %d revisions\n",
		r.Repository, r.PullRequests, r.Matched, r.Inserted, r.Unchanged, r.NewOutcomes, r.Revisions)
	p.f("%d requests, %d conditional, %d not modified; %d waits for the rate limit\n",
		r.Requests, r.Conditional, r.NotModified, r.RateWaits)
	return p.err
}

// ListedRecord is one record in a list: its id, outcome, group and the
// start of its task.
type ListedRecord struct {
	ID     string `json:"id"`
	Label  string `json:"label"`
	Status string `json:"status"`
	Source string `json:"source"`
	Group  string `json:"group,omitempty"`
	Task   string `json:"task"`
}

// RecordList is the records a filter selects (records list); marshalled,
// a JSON array.
type RecordList []ListedRecord

// ListRecords lists the records a filter selects, in import order.
func ListRecords(ctx context.Context, st record.Store, f record.Filter) (RecordList, error) {
	list := RecordList{}
	err := st.Records(ctx, f, func(r *record.Record) error {
		list = append(list, ListedRecord{ID: r.ID, Label: string(r.Outcome.Label), Status: string(r.Outcome.Status),
			Source: string(r.Outcome.Source), Group: r.Group, Task: FirstLine(r.Task, 60)})
		return nil
	})
	return list, err
}

// WriteText writes a table of the records.
func (l RecordList) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "ID\tLABEL\tSTATUS\tSOURCE\tGROUP\tTASK")
	for _, r := range l {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Label, r.Status, r.Source, r.Group, r.Task)
	}
	p.flush(tw)
	return p.err
}

// FirstLine is the first non-blank line of s, cut to n runes.
func FirstLine(s string, n int) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > n {
				return string(r[:n-1]) + "…"
			}
			return line
		}
	}
	return ""
}

// WriteRecords writes records as native JSONL, one canonical line each.
func WriteRecords(w io.Writer, rs ...*record.Record) error {
	for _, r := range rs {
		b, err := r.Canonical()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// Warnings name the parts too small to measure a judge on: fewer than 30
// records, or no record of a label.
func (r *SplitResult) Warnings() []string {
	var ws []string
	for _, part := range record.Parts {
		ps := r.Parts[part]
		switch {
		case ps.Records == 0:
		case ps.Pass == 0 || ps.Fail == 0:
			ws = append(ws, fmt.Sprintf("part %s has no record of one label (%d pass, %d fail): no agreement can be measured on it", part, ps.Pass, ps.Fail))
		case ps.Records < 30:
			ws = append(ws, fmt.Sprintf("part %s has only %d records: figures on it will have wide intervals (30 or more is a useful floor)", part, ps.Records))
		}
	}
	return ws
}
