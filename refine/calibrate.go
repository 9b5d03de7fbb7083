// Package refine is AutoRefine's calibration loop, its baselines and its
// studies. Calibration reruns a judge's prompt on training records kept by
// an informed teacher, turns each disagreement into proposed edits,
// balances reasons to fail with reasons to pass, has the edits applied
// under a length cap, and picks the final prompt among all versions by
// Scott's pi on an uncurated validation part.
//
// Every model call goes through an llm.Client, so a calibration is a
// deterministic function of the records, the configuration and the
// answers: a run killed midway and started again replays the cached
// answers and sends only what was never answered. Offline, each stage
// records its pending requests and the run stops at the stage boundary.
package refine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// Store keeps what calibration produces. It is defined here, where it is
// used; store/sqldb implements it.
type Store interface {
	judge.Store
	SaveDecisions(ctx context.Context, ds []teacher.Decision) error
}

// Config is a calibration's configuration. Zero values take defaults.
type Config struct {
	Judge *judge.Spec
	// Model is the judge's model; TeacherModel and EditorModel default to it.
	Model, TeacherModel, EditorModel string
	// TeacherModels, when it names several models, makes the teacher a
	// panel that decides by Quorum (TeacherModel is then the first).
	TeacherModels []string
	Quorum        teacher.Quorum
	// LabelBlind first asks each teacher to predict each training record's
	// outcome without it, to measure how often it keeps a label it would
	// not have predicted.
	LabelBlind bool
	// ValidateEdits keeps an edit (or balanced pair) only if, applied
	// alone, it fixes at least as many verdicts as it breaks on
	// ValidateSample (default 40) kept training records that motivated
	// none of it.
	ValidateEdits  bool
	ValidateSample int
	// Retest, when above 0, asks the original prompt again about that
	// many validation records: the judge's own flip rate, the floor of
	// every version's flips against the original.
	Retest int
	// Seed, when not 0, makes the editor sample: its proposal and applier
	// requests carry the seed and EditorTemperature (default 0.7), so
	// repeats with different seeds take different paths, while the
	// teacher's and the judge's requests, unchanged, come from the cache.
	// 0 keeps every request at temperature 0.
	Seed              int64
	EditorTemperature float64
	// Repeats is only for Plan: the number of repeated runs to bound.
	Repeats int
	// MaxIter bounds the iterations (default 5).
	MaxIter int
	// MaxPromptChars caps the revised prompt (system prompt plus checks'
	// questions); default twice the original's size, at least 4,000.
	MaxPromptChars int
	// MinKept is the share of the current prompt's sentences no edit
	// touches that a revision must keep (default DefaultMinKept).
	MinKept float64
	// Selection picks the final version (default: lower-bound at 0.8).
	Selection   Selection
	Concurrency int
	Boot        metrics.BootstrapOptions
	// Progress, when set, reports each stage.
	Progress func(stage string, done, total int)
}

// sample gives an editor's request the seed and temperature of a sampled
// calibration (nothing when Seed is 0).
func (cfg Config) sample(req *llm.Request) {
	if cfg.Seed == 0 {
		return
	}
	seed, t := cfg.Seed, cfg.EditorTemperature
	req.Seed, req.Temperature = &seed, &t
}

// withDefaults fills the zero values of a configuration.
func (cfg Config) withDefaults() Config {
	if cfg.MaxIter <= 0 {
		cfg.MaxIter = 5
	}
	if cfg.ValidateSample <= 0 {
		cfg.ValidateSample = DefaultValidateSample
	}
	if len(cfg.TeacherModels) > 0 {
		cfg.TeacherModel = cfg.TeacherModels[0]
	}
	if cfg.TeacherModel == "" {
		cfg.TeacherModel = cfg.Model
	}
	if len(cfg.TeacherModels) == 0 {
		cfg.TeacherModels = []string{cfg.TeacherModel}
	}
	if cfg.EditorModel == "" {
		cfg.EditorModel = cfg.Model
	}
	if cfg.MaxPromptChars <= 0 {
		cfg.MaxPromptChars = max(4000, 2*PromptSize(cfg.Judge))
	}
	if cfg.Seed != 0 && cfg.EditorTemperature <= 0 {
		cfg.EditorTemperature = 0.7
	}
	if cfg.MinKept <= 0 {
		cfg.MinKept = DefaultMinKept
	}
	cfg.Selection = cfg.Selection.withDefaults()
	return cfg
}

// Data are the split's parts. Train is filtered by the teacher; Val is used
// whole; Test only for the final report.
type Data struct {
	Train, Val, Test []*record.Record
}

// Add puts records in one part of the data (none for another part).
func (d *Data) Add(p record.Part, rs ...*record.Record) {
	switch p {
	case record.Train:
		d.Train = append(d.Train, rs...)
	case record.Val:
		d.Val = append(d.Val, rs...)
	case record.Test:
		d.Test = append(d.Test, rs...)
	}
}

// Version is one prompt version of a calibration.
type Version struct {
	Hash      string      `json:"hash"`
	Parent    string      `json:"parent,omitempty"`
	Iteration int         `json:"iteration"`
	Spec      *judge.Spec `json:"-"`
	// Accepted are the edits that made it; Dropped the unpaired proposals
	// left out; Proposed all proposals of the iteration.
	Accepted []Proposal `json:"accepted,omitempty"`
	Dropped  int        `json:"dropped"`
	// DroppedEdits are the unpaired proposals (Dropped of them) and the
	// proposals already in the prompt, each with why.
	DroppedEdits []DroppedEdit `json:"dropped_edits,omitempty"`
	// Conflicts counts the rewordings and removals left out because
	// another edit of the same target was accepted.
	Conflicts int `json:"conflicts"`
	Proposed  int `json:"proposed"`
	// TrainPi is on the teacher's kept training records, ValPi on the
	// whole validation part; Disagreements count kept training records it
	// gets wrong.
	TrainPi       metrics.Value `json:"train_scott_pi"`
	ValPi         metrics.Value `json:"val_scott_pi"`
	Disagreements int           `json:"disagreements"`
	// TooLong counts the applier's revisions refused for the length cap
	// on the way to this version; Refused every refused revision on the
	// way, with its cause.
	TooLong int       `json:"revisions_over_cap"`
	Refused []Refusal `json:"refusals,omitempty"`
	// Kept is the share of the parent's untouched sentences the revision
	// kept; ApplierConflicts the contradictions the applier says it
	// resolved.
	Kept             float64  `json:"kept_text,omitempty"`
	ApplierConflicts []string `json:"applier_conflicts,omitempty"`
	Note             string   `json:"note,omitempty"`
	// On validation: the paired gain in pi over the original (its
	// interval at the selection's level), and the recalls of each class.
	ValGain       metrics.Figure `json:"val_gain"`
	ValFailRecall metrics.Value  `json:"val_fail_recall"`
	ValPassRecall metrics.Value  `json:"val_pass_recall"`
	// Unselectable says why the selection rule could not pick it.
	Unselectable string `json:"unselectable,omitempty"`
	// TrainUnmotivated is pi on the kept training records that motivated
	// none of its accepted edits (nor its ancestors'): train pi without
	// the records the edits were written for. ValFlips counts the
	// validation records it decides otherwise than the original.
	TrainUnmotivated metrics.Figure `json:"train_unmotivated"`
	// UnmotivatedFixed and UnmotivatedBroken count those records it
	// decides right where the original was wrong, and the reverse.
	UnmotivatedFixed  int `json:"train_unmotivated_fixed"`
	UnmotivatedBroken int `json:"train_unmotivated_broken"`
	ValFlips          int `json:"val_flips"`
	motivated         map[string]bool
}

// Result is a calibration's outcome.
type Result struct {
	Judge     string             `json:"judge"`
	Kind      judge.Kind         `json:"kind"`
	Inputs    []string           `json:"inputs"`
	Teacher   teacher.Stats      `json:"teacher"`
	Decisions []teacher.Decision `json:"-"`
	// Panel describes the teachers when several decided (Teacher then
	// counts the panel's combined decisions).
	Panel *teacher.PanelStats `json:"panel,omitempty"`
	// Blind is the label-blind check of each teacher (with LabelBlind).
	Blind      []teacher.BlindStats `json:"label_blind,omitempty"`
	Versions   []*Version           `json:"versions"`
	Selected   int                  `json:"selected"`
	Iterations int                  `json:"iterations"`
	StopReason string               `json:"stop_reason"`
	MaxChars   int                  `json:"max_prompt_chars"`
	// TooLong counts every revision refused for the length cap, those of
	// versions kept and of revisions given up; Refused lists every
	// refused revision.
	TooLong int       `json:"revisions_over_cap"`
	Refused []Refusal `json:"refusals,omitempty"`
	// Conflicts counts every edit conflict: edits left out for another of
	// the same target or for saying the opposite of a reason, and the
	// contradictions the applier resolved.
	Conflicts int `json:"conflicts"`
	// Selection is the rule that picked the selected version, and why.
	Selection Selection `json:"selection"`
	// BlindAgreement (with LabelBlind) sets the teacher's blind
	// predictions beside the judge on the same training records; Retest
	// (with Retest) is the original prompt asked twice on validation.
	BlindAgreement *BlindAgreement `json:"blind_agreement,omitempty"`
	Retest         *judge.Retest   `json:"retest,omitempty"`
	// Warnings are what the calibration found that a reader must know.
	Warnings []string `json:"warnings,omitempty"`
	// On the test part: the original prompt, the original with its rubric
	// threshold tuned on train (nil for binary judges), the selected
	// prompt, and the paired difference selected minus original.
	Original       *judge.Evaluation         `json:"-"`
	Tuned          *judge.Evaluation         `json:"-"`
	TunedThreshold int                       `json:"tuned_threshold,omitempty"`
	Calibrated     *judge.Evaluation         `json:"-"`
	Gain           map[string]metrics.Figure `json:"gain"`

	// The records behind the figures (kept out of the JSON, which is
	// the calibration's summary; the run log keeps them): the training
	// records with the first teacher's label-blind predictions, and the
	// test records with the original's and the selected prompt's verdicts.
	Train              []*record.Record         `json:"-"`
	Predictions        []teacher.Prediction     `json:"-"`
	Test               []*record.Record         `json:"-"`
	OriginalVerdicts   map[string]judge.Verdict `json:"-"`
	CalibratedVerdicts map[string]judge.Verdict `json:"-"`
}

// SelectedSpec returns the selected prompt.
func (r *Result) SelectedSpec() *judge.Spec { return r.Versions[r.Selected].Spec }

// stage collects the pending requests of one stage of calibration.
type stage struct {
	name    string
	pending int
}

func (s *stage) err() error {
	if s.pending == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d requests: %w", s.name, s.pending, llm.ErrPending)
}

type calibration struct {
	ctx    context.Context
	client llm.Client
	st     Store
	cfg    Config
	// valOrig is the original prompt on validation, which every
	// version's gain is paired with.
	valOrig *judge.Evaluation
}

// judgeSet judges records with a spec and stores the verdicts.
func (c *calibration) judgeSet(sg *stage, s *judge.Spec, rs []*record.Record, what string) (map[string]judge.Verdict, error) {
	if err := c.st.SavePrompt(c.ctx, judge.VersionOf(s)); err != nil {
		return nil, err
	}
	res, err := judge.Run(c.ctx, c.client, s, c.cfg.Model, rs, judge.RunOptions{Concurrency: c.cfg.Concurrency,
		Progress: c.progress("judge "+s.ShortVersion()+" on "+what, len(rs))})
	if res != nil && len(res.Verdicts) > 0 {
		if err := c.st.SaveVerdicts(context.WithoutCancel(c.ctx), res.Verdicts); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if len(res.Failed) > 0 {
		return nil, fmt.Errorf("%d records could not be judged; first: %w", len(res.Failed), res.Failed[0])
	}
	sg.pending += res.Pending
	if res.Pending == 0 {
		if err := judge.ReadableVerdicts(c.cfg.Model, res.Verdicts); err != nil {
			return nil, fmt.Errorf("judge %s on %s: %w", s.ShortVersion(), what, err)
		}
	}
	out := map[string]judge.Verdict{}
	for _, v := range res.Verdicts {
		out[v.RecordID] = v
	}
	return out, nil
}

func (c *calibration) progress(stage string, total int) func(int, int) {
	if c.cfg.Progress == nil {
		return nil
	}
	return func(done, _ int) { c.cfg.Progress(stage, done, total) }
}

// Calibrate runs AutoRefine's calibration of cfg.Judge.
func Calibrate(ctx context.Context, client llm.Client, st Store, data Data, cfg Config) (*Result, error) {
	if cfg.Judge.Kind != judge.Binary && cfg.Judge.Kind != judge.Rubric {
		return nil, fmt.Errorf("calibration works on binary and rubric judges, not %s", cfg.Judge.Kind)
	}
	if len(data.Train) == 0 || len(data.Val) == 0 || len(data.Test) == 0 {
		return nil, errors.New("calibration needs records in train, val and test")
	}
	cfg = cfg.withDefaults()
	if PromptSize(cfg.Judge) > cfg.MaxPromptChars {
		return nil, fmt.Errorf("the original prompt (%d characters) is already over the cap of %d", PromptSize(cfg.Judge), cfg.MaxPromptChars)
	}
	c := &calibration{ctx: ctx, client: client, st: st, cfg: cfg}
	res := &Result{Judge: cfg.Judge.Name, Kind: cfg.Judge.Kind, Inputs: cfg.Judge.Inputs, MaxChars: cfg.MaxPromptChars}
	noBoot := metrics.BootstrapOptions{Resamples: -1}

	// Stage 1: the teacher on train; the original prompt on all of train
	// (the threshold-tuned baseline needs it), on val and on test.
	s1 := &stage{name: "teacher and original prompt"}
	var members []teacher.Member
	for _, model := range cfg.TeacherModels {
		name := "teacher"
		if len(cfg.TeacherModels) > 1 {
			name = "teacher " + model
		}
		mds, pending, err := teacher.Run(ctx, client, cfg.Judge, model, data.Train, cfg.Concurrency, func(done int) {
			if cfg.Progress != nil {
				cfg.Progress(name, done, len(data.Train))
			}
		})
		if err != nil {
			return nil, err
		}
		s1.pending += pending
		if len(mds) > 0 {
			if err := st.SaveDecisions(context.WithoutCancel(ctx), mds); err != nil {
				return nil, err
			}
		}
		members = append(members, teacher.Member{Model: model, Decisions: mds})
		if cfg.LabelBlind {
			preds, pending, err := teacher.RunBlind(ctx, client, cfg.Judge, model, data.Train, cfg.Concurrency, func(done int) {
				if cfg.Progress != nil {
					cfg.Progress("label-blind "+name, done, len(data.Train))
				}
			})
			if err != nil {
				return nil, err
			}
			s1.pending += pending
			if len(res.Predictions) == 0 {
				res.Predictions = preds
			}
			if pending == 0 {
				level := cfg.Boot.Level
				if level == 0 {
					level = 0.95
				}
				res.Blind = append(res.Blind, teacher.SummariseBlind(data.Train, model, preds, mds, level))
			}
		}
	}
	ds := members[0].Decisions
	if len(members) > 1 {
		ds = teacher.Combine(data.Train, members, cfg.Quorum)
		ps := teacher.SummarisePanel(data.Train, members, cfg.Quorum, cfg.Model, cfg.Boot)
		res.Panel = &ps
	}
	orig := cfg.Judge
	trainAll, err := c.judgeSet(s1, orig, data.Train, "train")
	if err != nil {
		return nil, err
	}
	valV, err := c.judgeSet(s1, orig, data.Val, "val")
	if err != nil {
		return nil, err
	}
	testOrig, err := c.judgeSet(s1, orig, data.Test, "test")
	if err != nil {
		return nil, err
	}
	if cfg.Retest > 0 && valV != nil {
		rt, pending, err := retestOriginal(ctx, client, cfg, data.Val, valV)
		if err != nil {
			return nil, err
		}
		s1.pending += pending
		res.Retest = rt
	}
	if err := s1.err(); err != nil {
		return nil, err
	}
	if cfg.LabelBlind && len(res.Predictions) > 0 {
		res.BlindAgreement = blindAgreement(data.Train, res.Predictions, orig, trainAll, cfg.Boot)
	}
	res.Decisions = ds
	res.Teacher = teacher.Summarise(data.Train, ds)
	kept := teacher.KeptSet(data.Train, ds)
	if len(kept) == 0 {
		return nil, errors.New("the teacher kept no training record: nothing to calibrate on (see its abstentions)")
	}
	justification := map[string]string{}
	for _, d := range ds {
		justification[d.RecordID] = d.Justification
	}

	cur := &Version{Hash: orig.Version(), Spec: orig, motivated: map[string]bool{}}
	curTrain := subset(trainAll, kept)
	origTrain := curTrain
	if err := c.measure(cur, kept, curTrain, data.Val, valV); err != nil {
		return nil, err
	}
	cur.TrainUnmotivated, _, _ = unmotivated(orig, orig, kept, curTrain, origTrain, cur.motivated, cfg.Boot)
	if err := c.saveVersion(cur); err != nil {
		return nil, err
	}
	res.Versions = []*Version{cur}
	threshold := orig.PassThreshold()

	for it := 1; it <= cfg.MaxIter; it++ {
		res.Iterations = it
		dis := disagreements(cur.Spec, kept, curTrain, threshold)
		if len(dis) == 0 {
			res.StopReason = "no disagreement on the training records"
			break
		}
		// Proposals, one call per disagreement.
		sp := &stage{name: fmt.Sprintf("iteration %d: edit proposals", it)}
		props, err := c.propose(sp, cur.Spec, dis, curTrain, justification, threshold)
		if err != nil {
			return nil, err
		}
		if err := sp.err(); err != nil {
			return nil, err
		}
		all := props
		props, known := NewProposals(cur.Spec, props)
		proposed := len(props)
		props, opposed := DropOpposed(cur.Spec, props)
		accepted, unpaired := BalanceEdits(props)
		accepted, sameTarget := OneEditATarget(accepted)
		accepted, opposedNew := DropOpposed(cur.Spec, accepted)
		opposed = append(opposed, opposedNew...)
		dropped := len(unpaired)
		res.Conflicts += len(sameTarget) + len(opposed)
		droppedEdits := opposed
		for _, p := range sameTarget {
			droppedEdits = append(droppedEdits, DroppedEdit{p, "conflict: another edit of the same target was accepted"})
		}
		for _, p := range unpaired {
			droppedEdits = append(droppedEdits, DroppedEdit{p, "unpaired: no reason of the other kind to balance it"})
		}
		for _, p := range all {
			if inPrompt(cur.Spec, p) {
				droppedEdits = append(droppedEdits, DroppedEdit{p, "already in the prompt"})
			}
		}
		if cfg.ValidateEdits && len(accepted) > 0 {
			var failed []DroppedEdit
			if accepted, failed, err = c.validateEdits(it, cur, kept, curTrain, accepted); err != nil {
				return nil, err
			}
			droppedEdits = append(droppedEdits, failed...)
			if len(accepted) == 0 {
				res.StopReason = fmt.Sprintf("iteration %d: no edit passed validation (%d dropped: each fixed fewer other training records than it broke)", it, len(failed))
				break
			}
		}
		if len(accepted) == 0 {
			res.StopReason = fmt.Sprintf("iteration %d: no balanced edit (%d new proposals, %d unpaired dropped, %d already in the prompt, %d opposed to it)", it, proposed, dropped, known, len(opposed))
			break
		}
		// One applier call (and one retry), checked.
		ap, err := applyEdits(ctx, client, cur.Spec, cfg.EditorModel, accepted, cfg.MaxPromptChars, cfg.MinKept, cfg.sample)
		tooLong := 0
		for i := range ap.refusals {
			ap.refusals[i].Iteration = it
			if ap.refusals[i].Cause == CauseOverCap {
				tooLong++
			}
		}
		res.TooLong += tooLong
		res.Refused = append(res.Refused, ap.refusals...)
		if errors.Is(err, llm.ErrPending) {
			return nil, fmt.Errorf("iteration %d: applying edits: 1 request: %w", it, llm.ErrPending)
		}
		if err != nil {
			return nil, err
		}
		note := ap.note
		var revised *judge.Spec
		if ap.rev != nil {
			revised = ap.rev.Spec
			res.Conflicts += len(ap.rev.Conflicts)
			for _, p := range ap.rev.Missing {
				droppedEdits = append(droppedEdits, DroppedEdit{p, "left out by the applier to fit the length cap"})
			}
			accepted = slices.DeleteFunc(accepted, func(p Proposal) bool {
				return slices.ContainsFunc(ap.rev.Missing, func(m Proposal) bool { return m.key() == p.key() })
			})
		}
		if revised == nil || revised.Version() == cur.Spec.Version() {
			switch {
			case revised == nil:
			case note == "":
				note = "the revision changed nothing"
			default:
				note = "the revision changed nothing (" + note + ")"
			}
			res.StopReason = fmt.Sprintf("iteration %d: %s", it, note)
			break
		}
		next := &Version{Hash: revised.Version(), Parent: cur.Hash, Iteration: it, Spec: revised,
			Accepted: accepted, Dropped: dropped, DroppedEdits: droppedEdits, Proposed: proposed, Note: note, TooLong: tooLong,
			Refused: ap.refusals, ApplierConflicts: ap.rev.Conflicts, Kept: ap.rev.Kept,
			Conflicts: len(sameTarget) + len(opposed) + len(ap.rev.Conflicts)}
		// The new version on the kept training records and on val.
		sj := &stage{name: fmt.Sprintf("iteration %d: judging the new prompt", it)}
		nextTrain, err := c.judgeSet(sj, revised, kept, "train")
		if err != nil {
			return nil, err
		}
		nextVal, err := c.judgeSet(sj, revised, data.Val, "val")
		if err != nil {
			return nil, err
		}
		if err := sj.err(); err != nil {
			return nil, err
		}
		if err := c.measure(next, kept, nextTrain, data.Val, nextVal); err != nil {
			return nil, err
		}
		next.motivated = motivatedBy(cur.motivated, accepted)
		next.TrainUnmotivated, next.UnmotivatedFixed, next.UnmotivatedBroken = unmotivated(revised, orig, kept, nextTrain, origTrain, next.motivated, cfg.Boot)
		next.ValFlips = flipsBetween(revised, orig, data.Val, nextVal, valV)
		if next.TrainPi.Defined() && res.Versions[0].TrainPi.Defined() && next.TrainPi.V > res.Versions[0].TrainPi.V &&
			next.UnmotivatedFixed <= next.UnmotivatedBroken {
			res.Warnings = append(res.Warnings, fmt.Sprintf("version %d (%.12s) gains on train only on the records its edits were written for: "+
				"of the %s kept training records that motivated none of its edits it fixes %d and breaks %d; expect no gain out of sample unless validation shows one",
				it, next.Hash, unmotivatedCount(kept, next.motivated), next.UnmotivatedFixed, next.UnmotivatedBroken))
		}
		if err := c.saveVersion(next); err != nil {
			return nil, err
		}
		res.Versions = append(res.Versions, next)
		cur, curTrain = next, nextTrain
		if it == cfg.MaxIter {
			res.StopReason = fmt.Sprintf("reached the iteration limit (%d)", cfg.MaxIter)
		}
	}
	if res.StopReason != "" && cur.Disagreements == 0 && len(res.Versions) > 0 {
		// Count the final version's disagreements for the report.
		cur.Disagreements = len(disagreements(cur.Spec, kept, curTrain, threshold))
	}

	// Selection among all versions, the original included.
	res.Selection = cfg.Selection
	res.Selected, res.Selection.Why = cfg.Selection.Pick(res.Versions)

	// Test: the original, the tuned original (rubric), the selected.
	selected := res.Versions[res.Selected].Spec
	st2 := &stage{name: "test"}
	testSel := testOrig
	if res.Selected != 0 {
		if testSel, err = c.judgeSet(st2, selected, data.Test, "test"); err != nil {
			return nil, err
		}
	}
	if err := st2.err(); err != nil {
		return nil, err
	}
	res.Train, res.Test, res.OriginalVerdicts, res.CalibratedVerdicts = data.Train, data.Test, testOrig, testSel
	if res.Original, err = judge.Evaluate(orig, cfg.Model, data.Test, testOrig, 0, cfg.Boot); err != nil {
		return nil, err
	}
	if res.Calibrated, err = judge.Evaluate(selected, cfg.Model, data.Test, testSel, 0, cfg.Boot); err != nil {
		return nil, err
	}
	if orig.Kind == judge.Rubric {
		te, err := judge.Evaluate(orig, cfg.Model, data.Train, trainAll, 0, noBoot)
		if err != nil {
			return nil, err
		}
		if res.TunedThreshold, _, err = te.TuneThreshold("scott_pi"); err != nil {
			return nil, err
		}
		if res.Tuned, err = judge.Evaluate(orig, cfg.Model, data.Test, testOrig, res.TunedThreshold, cfg.Boot); err != nil {
			return nil, err
		}
	}
	if res.Gain, err = res.Calibrated.Compare(res.Original, cfg.Boot); err != nil {
		return nil, err
	}
	return res, nil
}

func subset(vs map[string]judge.Verdict, rs []*record.Record) map[string]judge.Verdict {
	out := make(map[string]judge.Verdict, len(rs))
	for _, r := range rs {
		if v, ok := vs[r.ID]; ok {
			out[r.ID] = v
		}
	}
	return out
}

// measure fills a version's train and validation figures.
func (c *calibration) measure(v *Version, train []*record.Record, trainV map[string]judge.Verdict, val []*record.Record, valV map[string]judge.Verdict) error {
	noBoot := metrics.BootstrapOptions{Resamples: -1}
	te, err := judge.Evaluate(v.Spec, c.cfg.Model, train, trainV, 0, noBoot)
	if err != nil {
		return err
	}
	ve, err := judge.Evaluate(v.Spec, c.cfg.Model, val, valV, 0, noBoot)
	if err != nil {
		return err
	}
	v.TrainPi, v.ValPi = te.Metrics.ScottPi, ve.Metrics.ScottPi
	v.ValFailRecall, v.ValPassRecall = ve.Metrics.FailRecall, ve.Metrics.PassRecall
	if c.valOrig == nil {
		c.valOrig = ve
	}
	v.ValGain = valGain(ve, c.valOrig, c.cfg.Boot, c.cfg.Selection.Level)
	v.Disagreements = len(disagreements(v.Spec, train, trainV, v.Spec.PassThreshold()))
	return nil
}

func (c *calibration) saveVersion(v *Version) error {
	pv := judge.VersionOf(v.Spec)
	pv.Parent, pv.Iteration, pv.Note = v.Parent, v.Iteration, v.Note
	for _, e := range v.Accepted {
		pv.Edits = append(pv.Edits, e.Kind+": "+e.Text)
	}
	pv.Metrics = map[string]float64{"disagreements": float64(v.Disagreements)}
	if v.TrainPi.Defined() {
		pv.Metrics["train_scott_pi"] = v.TrainPi.V
	}
	if v.ValPi.Defined() {
		pv.Metrics["val_scott_pi"] = v.ValPi.V
	}
	return c.st.SavePrompt(c.ctx, pv)
}

// disagreements lists the kept training records whose valid verdict
// differs from their label, in record order.
func disagreements(s *judge.Spec, rs []*record.Record, vs map[string]judge.Verdict, threshold int) []*record.Record {
	var out []*record.Record
	for _, r := range rs {
		v, ok := vs[r.ID]
		if !ok {
			continue
		}
		o := v.Decide(s.Kind, threshold)
		if o == judge.Invalid {
			continue
		}
		if string(o) != string(r.Outcome.Label) {
			out = append(out, r)
		}
	}
	return out
}

// NewProposals drops proposed reasons the prompt already carries, word for
// word (a proposer often proposes again what an earlier iteration added),
// and counts them.
func NewProposals(s *judge.Spec, ps []Proposal) ([]Proposal, int) {
	var out []Proposal
	for _, p := range ps {
		if !inPrompt(s, p) {
			out = append(out, p)
		}
	}
	return out, len(ps) - len(out)
}

// inPrompt says whether a proposed reason is already in the prompt, but
// for case and spacing.
func inPrompt(s *judge.Spec, p Proposal) bool {
	norm := func(t string) string { return strings.ToLower(strings.Join(strings.Fields(t), " ")) }
	return (p.Kind == FailReason || p.Kind == PassReason) && strings.TrimSpace(p.Text) != "" && strings.Contains(norm(PromptText(s)), norm(p.Text))
}

// DroppedEdit is a proposal a calibration left out, and why.
type DroppedEdit struct {
	Proposal
	Why string `json:"why"`
}

// propose makes one proposer call per disagreement and returns all
// proposals in record order.
func (c *calibration) propose(sg *stage, s *judge.Spec, dis []*record.Record, vs map[string]judge.Verdict, justification map[string]string, threshold int) ([]Proposal, error) {
	props := make([][]Proposal, len(dis))
	var progress func(int)
	if c.cfg.Progress != nil {
		progress = func(done int) { c.cfg.Progress("edit proposals", done, len(dis)) }
	}
	res, err := llm.ForEach(c.ctx, len(dis), max(c.cfg.Concurrency, 1), progress, func(ctx context.Context, i int) error {
		r := dis[i]
		v := vs[r.ID]
		req, err := ProposerRequest(s, c.cfg.EditorModel, r, &v, threshold, justification[r.ID])
		if err == nil {
			c.cfg.sample(req)
			var resp *llm.Response
			if resp, err = c.client.Complete(ctx, req); err == nil {
				props[i] = ParseProposals(resp)
				return nil
			}
		}
		return fmt.Errorf("proposer on record %s: %w", r.ID, err)
	})
	sg.pending += res.Pending
	if err == nil && len(res.Failed) > 0 {
		err = res.Failed[0]
	}
	if err != nil {
		return nil, err
	}
	var out []Proposal
	for i, p := range props {
		for _, q := range p {
			q.Sources = []string{dis[i].ID}
			out = append(out, q)
		}
	}
	return out, nil
}
