package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

// ResultVersion is the version of the results' shape, in each top-level
// result's result_version field: it changes when a field is renamed or
// removed (adding one keeps it).
const ResultVersion = 1

// Store is what the use cases read and write.
type Store interface {
	record.Store
	judge.Store
	Prompt(ctx context.Context, hash string) (*judge.PromptVersion, error)
	Calibrations(ctx context.Context, judgeName string) ([]deploy.Calibration, error)
}

// Progress reports one stage's progress.
type Progress interface {
	Update(done int)
	Done()
}

// Env is what a use case runs with.
type Env struct {
	Store  Store
	Client llm.Client
	// Stats reports the model layer's counts, for a result's calls.
	Stats func() llm.RunStats
	// Progress starts the report of a stage of total steps (nil: none).
	Progress func(label string, total int) Progress
}

type noProgress struct{}

func (noProgress) Update(int) {}
func (noProgress) Done()      {}

func (e *Env) progress(label string, total int) Progress {
	if e.Progress == nil {
		return noProgress{}
	}
	return e.Progress(label, total)
}

func (e *Env) stats() llm.RunStats {
	if e.Stats == nil {
		return llm.RunStats{}
	}
	return e.Stats()
}

// Records reads the records of a split part (NAME:PART), leaving out
// those with the given statuses; a sample of about limit of them when
// limit > 0 (record.Sample).
// field names the configuration field of ref in errors.
func Records(ctx context.Context, st record.Store, field, ref string, exclude []record.Status, limit int) ([]*record.Record, error) {
	if ref == "" {
		return nil, deploy.FieldErrorf(field, "a split part NAME:PART is needed (make a split with 'gavel split NAME')")
	}
	name, part, err := record.ParseSplitRef(ref)
	if err != nil {
		return nil, deploy.FieldErrorf(field, "%v", err)
	}
	if part == "" {
		return nil, deploy.FieldErrorf(field, "%s: say which part to judge, e.g. %s:test (or %s:train, %s:val)", ref, name, name, name)
	}
	f := record.Filter{Split: name, Part: part, ExcludeStatus: exclude}
	if ml, ok := st.(record.MemberLister); ok && limit > 0 {
		// A sample reads only the records it keeps.
		members, err := ml.Members(ctx, f)
		if err != nil {
			return nil, err
		}
		if len(members) == 0 {
			return nil, fmt.Errorf("split %s has no records", ref)
		}
		if limit < len(members) {
			keep := record.SampleMembers(members, limit, 1)
			f.IDs = make([]string, 0, len(keep))
			for _, m := range members {
				if keep[m.ID] {
					f.IDs = append(f.IDs, m.ID)
				}
			}
		}
	}
	var rs []*record.Record
	err = st.Records(ctx, f, func(r *record.Record) error {
		rs = append(rs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("split %s has no records", ref)
	}
	// A limit is a sample that looks like the part (labels in their
	// shares, groups whole), not its first records (already drawn when the
	// store could list the members).
	if f.IDs != nil {
		return rs, nil
	}
	return record.Sample(rs, limit, 1), nil
}

// Parts reads a split's three parts (by its name), the first limit of
// each when limit > 0; field names the split's configuration field.
func Parts(ctx context.Context, st record.Store, field, name string, exclude []record.Status, limit int) (refine.Data, error) {
	if name == "" {
		return refine.Data{}, deploy.FieldErrorf(field, "a split's name is needed (make one with 'gavel split NAME')")
	}
	if strings.Contains(name, ":") {
		return refine.Data{}, deploy.FieldErrorf(field, "give the split's name: a calibration uses its train, val and test parts")
	}
	var d refine.Data
	for _, p := range record.Parts {
		rs, err := Records(ctx, st, field, name+":"+string(p), exclude, limit)
		if err != nil {
			return d, fmt.Errorf("%w (calibration needs all three parts)", err)
		}
		d.Add(p, rs...)
	}
	return d, nil
}

// CheckContextInputs refuses a judge input context.KEY that no record
// has: the judge would be shown nothing under that name.
func CheckContextInputs(s *judge.Spec, rs []*record.Record) error {
	for _, in := range s.Inputs {
		key, ok := strings.CutPrefix(in, "context.")
		if !ok {
			continue
		}
		found := false
		for _, r := range rs {
			if _, ok := r.Context[key]; ok {
				found = true
				break
			}
		}
		if !found && len(rs) > 0 {
			return deploy.FieldErrorf("inputs", "%s: none of the %d records has a context entry %q", in, len(rs), key)
		}
	}
	return nil
}

// Lineage reads a stored prompt version and the original it descends from
// (the root of its parents).
func Lineage(ctx context.Context, st Store, hash string) (*judge.PromptVersion, *judge.PromptVersion, error) {
	pv, err := st.Prompt(ctx, hash)
	if err != nil {
		return nil, nil, versionError("version", err)
	}
	root := pv
	for depth := 0; root.Parent != ""; depth++ {
		if depth > 1000 {
			return nil, nil, fmt.Errorf("version %.12s: its lineage does not end", pv.Hash)
		}
		if root, err = st.Prompt(ctx, root.Parent); err != nil {
			return nil, nil, fmt.Errorf("version %.12s: parent: %w", pv.Hash, err)
		}
	}
	return pv, root, nil
}

// versionError makes a store's error on a named prompt version an
// application error about a configuration field.
func versionError(field string, err error) error {
	switch {
	case errors.Is(err, record.ErrNotFound):
		return &deploy.Error{Code: deploy.NotFound, Field: field, Msg: "field " + field + ": " + err.Error(), Err: err}
	case errors.Is(err, judge.ErrVersionRef):
		return &deploy.Error{Code: deploy.Invalid, Field: field, Msg: "field " + field + ": " + err.Error(), Err: err}
	}
	return err
}

// JudgeRecords runs a judge over records through the client, stores its
// prompt version and verdicts, and returns the verdicts by record. Every
// record is tried before it stops: with requests pending (offline) it
// returns an llm.PendingError once they are all recorded.
func JudgeRecords(ctx context.Context, env *Env, s *judge.Spec, model string, rs []*record.Record, concurrency int) (map[string]judge.Verdict, error) {
	if err := env.Store.SavePrompt(ctx, judge.VersionOf(s)); err != nil {
		return nil, err
	}
	prog := env.progress(fmt.Sprintf("judge %s (%s): records", s.Name, s.ShortVersion()), len(rs))
	res, runErr := judge.Run(ctx, env.Client, s, model, rs, judge.RunOptions{Concurrency: concurrency,
		Progress: func(done, _ int) { prog.Update(done) }})
	prog.Done()
	if res != nil && len(res.Verdicts) > 0 {
		// What was judged is kept, even when the run stopped early.
		if err := env.Store.SaveVerdicts(context.WithoutCancel(ctx), res.Verdicts); err != nil {
			return nil, err
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	if res.Pending > 0 {
		return nil, &llm.PendingError{N: res.Pending}
	}
	if len(res.Failed) > 0 {
		return nil, fmt.Errorf("%d of %d records could not be judged (rerun to retry them; the others are kept); first: %w",
			len(res.Failed), len(rs), res.Failed[0])
	}
	if err := judge.ReadableVerdicts(model, res.Verdicts); err != nil {
		return nil, err
	}
	out := make(map[string]judge.Verdict, len(res.Verdicts))
	for _, v := range res.Verdicts {
		out[v.RecordID] = v
	}
	return out, nil
}

// stages runs judging steps one after another, going on past a stop with
// requests pending so that an offline run records all of a stage's
// requests before it stops; Err is then one PendingError for them all.
type stages struct {
	pending int
}

func (s *stages) judge(ctx context.Context, env *Env, sp *judge.Spec, model string, rs []*record.Record, concurrency int) (map[string]judge.Verdict, error) {
	vs, err := JudgeRecords(ctx, env, sp, model, rs, concurrency)
	if n, ok := llm.Pending(err); ok {
		s.pending += n
		return nil, nil
	}
	return vs, err
}

// retest asks the judge again about rs (judge.RunRetest); a pending ask
// is counted like the stage's others.
func (s *stages) retest(ctx context.Context, env *Env, sp *judge.Spec, model string, rs []*record.Record, first map[string]judge.Verdict,
	threshold, concurrency int, boot metrics.BootstrapOptions) (*judge.Retest, error) {
	prog := env.progress(fmt.Sprintf("retest %s (%s): records asked again", sp.Name, sp.ShortVersion()), len(rs))
	rt, res, err := judge.RunRetest(ctx, env.Client, sp, model, rs, first, threshold,
		judge.RunOptions{Concurrency: concurrency, Progress: func(done, _ int) { prog.Update(done) }}, boot)
	prog.Done()
	switch {
	case err != nil:
		return nil, err
	case res.Pending > 0:
		s.pending += res.Pending
		return nil, nil
	case len(res.Failed) > 0:
		return nil, fmt.Errorf("retest: %d of %d records could not be asked again (rerun to retry them); first: %w", len(res.Failed), len(rs), res.Failed[0])
	}
	return rt, nil
}

// Flips counts the records two judges decided differently, of those both
// decided readably (paired).
func Flips(a, b *judge.Spec, rs []*record.Record, va, vb map[string]judge.Verdict, threshold int) (flips, paired int) {
	if threshold == 0 {
		threshold = a.PassThreshold()
	}
	for _, r := range rs {
		x, okx := va[r.ID]
		y, oky := vb[r.ID]
		if !okx || !oky {
			continue
		}
		dx, dy := x.Decide(a.Kind, threshold), y.Decide(b.Kind, b.PassThreshold())
		if dx == judge.Invalid || dy == judge.Invalid {
			continue
		}
		paired++
		if dx != dy {
			flips++
		}
	}
	return flips, paired
}

func (s *stages) err() error {
	if s.pending > 0 {
		return &llm.PendingError{N: s.pending}
	}
	return nil
}

// CutRecords cuts each record's inputs longer than max characters
// (record.CutInputs): the judge and the teacher then see the same cut.
func CutRecords(rs []*record.Record, max int) []*record.Record {
	if max <= 0 {
		return rs
	}
	out := make([]*record.Record, len(rs))
	for i, r := range rs {
		out[i] = record.CutInputs(r, max)
	}
	return out
}

// CutData cuts the inputs of a split's three parts.
func CutData(d refine.Data, max int) refine.Data {
	return refine.Data{Train: CutRecords(d.Train, max), Val: CutRecords(d.Val, max), Test: CutRecords(d.Test, max)}
}

// cutCount counts the records whose inputs were cut.
func cutCount(rss ...[]*record.Record) int {
	n := 0
	for _, rs := range rss {
		for _, r := range rs {
			if r.InputsCut() {
				n++
			}
		}
	}
	return n
}
