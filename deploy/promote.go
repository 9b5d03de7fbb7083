package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// Evidence is what the promotion gate measured: the candidate version
// against the version it would replace, on a test part the calibration did
// not use, with the paired interval of the gain in Scott's pi.
type Evidence struct {
	Split     string         `json:"split"`
	Part      record.Part    `json:"part"`
	Model     string         `json:"model"`
	N         int            `json:"n"`
	Candidate string         `json:"candidate"`
	Baseline  string         `json:"baseline"`
	Gain      metrics.Figure `json:"gain_scott_pi"`
	// CandidatePi and BaselinePi are each version's Scott's pi there; the
	// drift monitor compares live agreement with CandidatePi's interval.
	CandidatePi metrics.Figure `json:"candidate_scott_pi"`
	BaselinePi  metrics.Figure `json:"baseline_scott_pi"`
	Passed      bool           `json:"passed"`
}

// Summary is the gate's result in one line.
func (e *Evidence) Summary() string {
	return fmt.Sprintf("gain in Scott's pi of %.12s over %.12s on %s:%s (%d records, %s): %s",
		e.Candidate, e.Baseline, e.Split, e.Part, e.N, e.Model, figureText(e.Gain))
}

func figureText(f metrics.Figure) string {
	if !f.Value.Defined() {
		return "undefined (" + f.Value.Undefined + ")"
	}
	s := fmt.Sprintf("%+.3f", f.Value.V)
	if f.CI != nil {
		s += fmt.Sprintf(" [%+.3f, %+.3f]", f.CI.Lo, f.CI.Hi)
		if f.CI.Warning != "" {
			s += " (" + f.CI.Warning + ")"
		}
	}
	return s
}

// ErrGateRefused is a promotion the gate refused: the gain's interval does
// not lie above 0.
var ErrGateRefused = errors.New("promotion refused: the gain's lower bound is not above 0")

// PromoteOptions configure Promote.
type PromoteOptions struct {
	// Split whose test part the gate evaluates on (default: that of the
	// calibration that made the version).
	Split string
	// Force activates the version whatever the gate says; Reason is then
	// required. Both are recorded.
	Force  bool
	Reason string
	// Actor is who asked (a token's name and id, or the user).
	Actor       string
	Concurrency int
	Boot        metrics.BootstrapOptions
	// Progress, when set, reports judging.
	Progress func(what string, done, total int)
}

// Promote makes a prompt version a judge's active version when its paired
// gain in Scott's pi over the active version (or, for a first promotion,
// the version its calibration started from), on the test part of the split
// the calibration used, has a lower bound above 0. Otherwise it returns the
// evidence and ErrGateRefused, unless opt.Force. Verdicts it needs are
// judged through client (cached, like every model call).
func Promote(ctx context.Context, st Store, client llm.Client, model, judgeName, version string, opt PromoteOptions) (*Activation, *Evidence, error) {
	if opt.Force && strings.TrimSpace(opt.Reason) == "" {
		return nil, nil, FieldErrorf("reason", "a forced promotion needs a reason")
	}
	cand, err := st.Prompt(ctx, version)
	if err != nil {
		return nil, nil, notFound(err)
	}
	if cand.Judge != judgeName {
		return nil, nil, Errorf(Invalid, "version %.12s belongs to judge %s, not %s", cand.Hash, cand.Judge, judgeName)
	}
	active, err := Active(ctx, st, judgeName)
	if err != nil {
		return nil, nil, err
	}
	var previous string
	if active != nil {
		previous = active.Version
		if active.Version == cand.Hash {
			return nil, nil, Errorf(Conflict, "version %.12s is already the active version of %s", cand.Hash, judgeName)
		}
	}
	cals, err := st.Calibrations(ctx, judgeName)
	if err != nil {
		return nil, nil, err
	}
	var cal *Calibration
	for i := len(cals) - 1; i >= 0; i-- {
		if slices.Contains(cals[i].Versions, cand.Hash) {
			cal = &cals[i]
			break
		}
	}
	baseline := previous
	if baseline == "" {
		switch {
		case cal != nil && len(cal.Versions) > 0:
			baseline = cal.Versions[0]
		case slices.Contains(judge.Builtins(), judgeName):
			s, err := judge.Load(judgeName)
			if err != nil {
				return nil, nil, err
			}
			baseline = s.Version()
			if err := st.SavePrompt(ctx, judge.VersionOf(s)); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, Errorf(Invalid, "judge %s has no active version and no calibration made %.12s: nothing to compare it with", judgeName, cand.Hash)
		}
	}
	split := opt.Split
	if split == "" {
		if cal == nil || cal.Split == "" {
			return nil, nil, Errorf(Invalid, "no stored calibration made version %.12s: give the split whose test part it was not calibrated on", cand.Hash)
		}
		split = cal.Split
	}
	base, err := st.Prompt(ctx, baseline)
	if err != nil {
		return nil, nil, err
	}
	ev, err := Gate(ctx, st, client, model, split, cand, base, opt)
	if err != nil {
		return nil, nil, err
	}
	action := ActionPromote
	if !ev.Passed {
		if !opt.Force {
			return nil, ev, &Error{Code: Conflict, Msg: ErrGateRefused.Error() + ": " + ev.Summary(), Err: ErrGateRefused}
		}
		action = ActionForce
	}
	a := &Activation{Judge: judgeName, Version: cand.Hash, Previous: previous, Action: action, Actor: opt.Actor,
		Reason: opt.Reason, Evidence: ev}
	if err := st.Activate(ctx, a); err != nil {
		if errors.Is(err, ErrActiveChanged) {
			return nil, ev, &Error{Code: Conflict, Msg: err.Error() + ": run the promotion again", Err: ErrActiveChanged}
		}
		return nil, ev, err
	}
	return a, ev, nil
}

// Gate measures a candidate version against a baseline on a split's test
// part (drafts left out, as calibration does).
func Gate(ctx context.Context, st Store, client llm.Client, model, split string, cand, base *judge.PromptVersion, opt PromoteOptions) (*Evidence, error) {
	var rs []*record.Record
	err := st.Records(ctx, record.Filter{Split: split, Part: record.Test, ExcludeStatus: []record.Status{record.StatusDraft}},
		func(r *record.Record) error { rs = append(rs, r); return nil })
	if err != nil {
		return nil, Errorf(Invalid, "split %s: %v", split, err)
	}
	if len(rs) == 0 {
		return nil, Errorf(Invalid, "split %s has no test records: the gate needs records the calibration did not use", split)
	}
	evals := make([]*judge.Evaluation, 2)
	for i, pv := range []*judge.PromptVersion{cand, base} {
		vs, err := st.Verdicts(ctx, pv.Hash, model)
		if err != nil {
			return nil, err
		}
		var missing []*record.Record
		for _, r := range rs {
			if _, ok := vs[r.ID]; !ok {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			var progress func(int, int)
			if opt.Progress != nil {
				what := fmt.Sprintf("judge %.12s on %s:test", pv.Hash, split)
				progress = func(d, t int) { opt.Progress(what, d, t) }
			}
			res, err := judge.Run(ctx, client, pv.Spec, model, missing, judge.RunOptions{Concurrency: opt.Concurrency, Progress: progress})
			if res != nil && len(res.Verdicts) > 0 {
				if serr := st.SaveVerdicts(context.WithoutCancel(ctx), res.Verdicts); serr != nil {
					return nil, serr
				}
				for _, v := range res.Verdicts {
					vs[v.RecordID] = v
				}
			}
			if err != nil {
				return nil, err
			}
			if len(res.Failed) > 0 || res.Pending > 0 {
				return nil, fmt.Errorf("judging %s:test with %.12s: %d failed, %d pending: %w", split, pv.Hash, len(res.Failed), res.Pending,
					errors.Join(append(res.Failed, llm.ErrPending)...))
			}
		}
		if evals[i], err = judge.Evaluate(pv.Spec, model, rs, vs, 0, opt.Boot); err != nil {
			return nil, err
		}
	}
	gain, err := evals[0].Compare(evals[1], opt.Boot)
	if err != nil {
		return nil, err
	}
	g := gain["scott_pi"]
	return &Evidence{Split: split, Part: record.Test, Model: model, N: len(rs), Candidate: cand.Hash, Baseline: base.Hash,
		Gain: g, CandidatePi: evals[0].Figures["scott_pi"], BaselinePi: evals[1].Figures["scott_pi"],
		Passed: g.Value.Defined() && g.CI != nil && g.CI.Lo > 0}, nil
}

// Rollback makes the version active before the current one active again.
func Rollback(ctx context.Context, st Store, judgeName, actor, reason string) (*Activation, error) {
	active, err := Active(ctx, st, judgeName)
	if err != nil {
		return nil, err
	}
	if active == nil {
		return nil, Errorf(Conflict, "judge %s has no active version to roll back from", judgeName)
	}
	target := active.Previous
	if target == "" && slices.Contains(judge.Builtins(), judgeName) {
		// The first version ever activated replaced the built-in prompt:
		// rolling back returns to it.
		s, err := judge.Load(judgeName)
		if err != nil {
			return nil, err
		}
		if s.Version() != active.Version {
			if err := st.SavePrompt(ctx, judge.VersionOf(s)); err != nil {
				return nil, err
			}
			target = s.Version()
		}
	}
	if target == "" {
		return nil, Errorf(Conflict, "judge %s has no earlier active version to roll back to", judgeName)
	}
	a := &Activation{Judge: judgeName, Version: target, Previous: active.Version, Action: ActionRollback,
		Actor: actor, Reason: reason}
	if err := st.Activate(ctx, a); err != nil {
		if errors.Is(err, ErrActiveChanged) {
			return nil, &Error{Code: Conflict, Msg: err.Error() + ": try again", Err: ErrActiveChanged}
		}
		return nil, err
	}
	return a, nil
}

// notFound makes a store's error on a named version an application
// error: not found, or a prefix that names none or several.
func notFound(err error) error {
	switch {
	case errors.Is(err, record.ErrNotFound):
		return &Error{Code: NotFound, Msg: err.Error(), Err: err}
	case errors.Is(err, judge.ErrVersionRef):
		return &Error{Code: Invalid, Msg: err.Error(), Err: err}
	}
	return err
}

// CLIActor names the person running a command, for the audit trail:
// "cli USER@HOST".
func CLIActor() string {
	u := os.Getenv("USER")
	if u == "" {
		u = "unknown user"
	}
	h, _ := os.Hostname()
	return "cli " + u + "@" + h
}
