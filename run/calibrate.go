package run

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/teacher"
)

// CalibrationStore is where calibrations go: a calibration's store, and
// the record of each calibration made.
type CalibrationStore interface {
	refine.Store
	SaveCalibration(ctx context.Context, judgeName, selected, split, model string, result *refine.Result) error
}

// CalibrateConfig configures a calibration (refine.Config), its repeats
// and its information ablation.
type CalibrateConfig struct {
	Refine refine.Config
	Split  string
	Data   refine.Data
	// Repeats, when 2 or more, runs that many calibrations with seeds
	// 1..Repeats (ResampleTrain: each on a group bootstrap of train).
	Repeats       int
	ResampleTrain bool
	// Ablate is a judge input to calibrate without as well (AutoRefine's
	// information ablation).
	Ablate       string
	Simulated    bool
	GavelVersion string
	// MaxInputChars, when above 0, cuts each longer input (CutRecords).
	MaxInputChars int
	// Starts, when given, are the starting prompts of a framing search
	// (--start): each judged on train and validation before any edit,
	// reported side by side, and the loop run from the best (Refine.Judge
	// is replaced by it).
	Starts []*judge.Spec
	// StartEach runs the loop from every start and selects across all
	// their versions (--start-each).
	StartEach bool
}

// Ablation is a calibration without one of the judge's inputs.
type Ablation struct {
	Input          string              `json:"input"`
	Without        refine.JudgeSummary `json:"without"`
	TeacherWithout teacher.Stats       `json:"teacher_without"`
}

// CalibrateResult is a calibration's result; marshalled, it is
// calibrate's --json output.
type CalibrateResult struct {
	ResultVersion int                   `json:"result_version"`
	Judges        []refine.JudgeSummary `json:"judges"`
	Teacher       teacher.Stats         `json:"teacher"`
	Simulated     bool                  `json:"simulated"`
	Split         string                `json:"split"`
	// Teachers and Panel describe a panel of teachers.
	Teachers       []teacher.MemberStats `json:"teachers,omitempty"`
	Panel          *teacher.PanelStats   `json:"panel,omitempty"`
	LabelBlind     []teacher.BlindStats  `json:"label_blind,omitempty"`
	Repeats        []refine.Run          `json:"repeats,omitempty"`
	RepeatsSummary *refine.RepeatSummary `json:"repeats_summary,omitempty"`
	Ablation       *Ablation             `json:"ablation,omitempty"`
	// InputsCut counts the records whose inputs --max-input-chars cut.
	InputsCut int `json:"inputs_cut"`
	// ValRecords and ValGroups measure the validation part the selection
	// rests on.
	ValRecords int `json:"val_records"`
	// Conflicts counts the edit conflicts (refine.Result.Conflicts).
	Conflicts int          `json:"conflicts"`
	ValGroups int          `json:"val_groups"`
	Calls     llm.RunStats `json:"calls"`
	// Selection is the rule that picked the selected version and why;
	// Versions every version with its validation figures;
	// RevisionsRefused the applier's refused revisions by cause.
	Selection        refine.Selection      `json:"selection"`
	Versions         []*refine.Version     `json:"versions"`
	RevisionsRefused []refine.RefusalCount `json:"revisions_refused"`
	// BlindAgreement (--label-blind) and Retest (--retest): the
	// calibration's reference points (refine.Result's).
	BlindAgreement *refine.BlindAgreement `json:"blind_agreement,omitempty"`
	Retest         *judge.Retest          `json:"retest,omitempty"`
	// Starts is the framing search (--start): every starting prompt;
	// StartEach the selection across a calibration from each.
	Starts    []Start    `json:"starts,omitempty"`
	StartEach *StartEach `json:"start_each,omitempty"`

	// Result is the (first) calibration; Without the ablated one.
	Result  *refine.Result `json:"-"`
	Without *refine.Result `json:"-"`
	// Report is the HTML and Markdown report's content.
	Report *report.CalibrationReport `json:"-"`
}

// checkCalibrate checks what the flags of a calibration can get wrong.
func checkCalibrate(cfg *CalibrateConfig) (*judge.Spec, error) {
	r := cfg.Refine
	switch {
	case r.MaxIter < 1:
		return nil, deploy.FieldErrorf("max_iter", "must be at least 1")
	case r.MaxPromptChars < 0:
		return nil, deploy.FieldErrorf("max_prompt_chars", "must not be negative")
	case r.Boot.Resamples < 1:
		return nil, deploy.FieldErrorf("resamples", "must be at least 1")
	case cfg.Repeats == 1 || cfg.Repeats < 0:
		return nil, deploy.FieldErrorf("repeats", "%d: give at least 2 runs (or none for one)", cfg.Repeats)
	case cfg.ResampleTrain && cfg.Repeats == 0:
		return nil, deploy.FieldErrorf("resample_train", "is for repeated calibrations")
	case cfg.Repeats > 0 && cfg.Ablate != "":
		return nil, deploy.FieldErrorf("repeats", "repeats and an ablation: run them apart")
	case r.Selection.Check() != nil:
		return nil, deploy.FieldErrorf("select", "%v", r.Selection.Check())
	case r.MinKept < 0 || r.MinKept > 1:
		return nil, deploy.FieldErrorf("min_kept_text", "%g: give a share between 0 and 1", r.MinKept)
	case r.Quorum.Rule == "count" && r.Quorum.K > max(1, len(r.TeacherModels)):
		return nil, deploy.FieldErrorf("teacher_quorum", "%d: there are only %d teacher models", r.Quorum.K, max(1, len(r.TeacherModels)))
	}
	if cfg.Ablate == "" {
		return nil, nil
	}
	s, input := r.Judge, cfg.Ablate
	if !s.Sees(input) && s.Sees("context."+input) {
		input = "context." + input // --ablate-input files: context.files
	}
	if !s.Sees(input) {
		return nil, deploy.FieldErrorf("ablate_input", "%s: the judge does not see it (its inputs: %v; add it with --inputs)", cfg.Ablate, s.Inputs)
	}
	ablated, err := s.WithInputs(slices.DeleteFunc(slices.Clone(s.Inputs), func(in string) bool { return in == input }))
	if err != nil {
		return nil, deploy.FieldErrorf("ablate_input", "%v", err)
	}
	return ablated, nil
}

// CheckCalibrate checks a calibration's configuration before anything is
// read.
func CheckCalibrate(cfg CalibrateConfig) error {
	_, err := checkCalibrate(&cfg)
	return err
}

// PlanCalibrate adds a calibration's calls to a dry run's plan.
func PlanCalibrate(ctx context.Context, p *llm.Plan, c llm.Cache, cfg CalibrateConfig) error {
	rc := cfg.Refine
	rc.Boot = refine.Config{}.Boot
	cfg.Data = CutData(cfg.Data, cfg.MaxInputChars)
	rc.Repeats = cfg.Repeats
	return refine.Plan(ctx, p, c, cfg.Data, rc)
}

// CalibrateOne runs one calibration of a split's data and stores it.
func CalibrateOne(ctx context.Context, env *Env, st CalibrationStore, data refine.Data, split string, rc refine.Config,
	progress func(title string) (func(stage string, done, total int), func())) (*refine.Result, error) {
	end := func() {}
	if progress != nil {
		rc.Progress, end = progress(fmt.Sprintf("calibrate %s", rc.Judge.Name))
	}
	res, err := refine.Calibrate(ctx, env.Client, st, data, rc)
	end()
	if err != nil {
		return nil, err
	}
	if err := st.SaveCalibration(context.WithoutCancel(ctx), rc.Judge.Name, res.Versions[res.Selected].Hash, split, rc.Model, res); err != nil {
		return nil, err
	}
	return res, nil
}

// fill sets what a calibration result reports of one calibration.
func (out *CalibrateResult) fill(res *refine.Result) {
	out.Result, out.Judges, out.Teacher, out.LabelBlind = res, []refine.JudgeSummary{res.Summary()}, res.Teacher, res.Blind
	out.Conflicts, out.Selection, out.Versions, out.RevisionsRefused = res.Conflicts, res.Selection, res.Versions, refine.CountRefusals(res.Refused)
	out.BlindAgreement, out.Retest = res.BlindAgreement, res.Retest
}

// Calibrate runs a calibration (or cfg.Repeats of them, or one with and
// one without cfg.Ablate), stores each, and reports it. progress, when
// set, hears each stage of each calibration, titled.
func Calibrate(ctx context.Context, env *Env, st CalibrationStore, cfg CalibrateConfig, progress func(title string) (func(stage string, done, total int), func())) (*CalibrateResult, error) {
	ablated, err := checkCalibrate(&cfg)
	if err != nil {
		return nil, err
	}
	cfg.Data = CutData(cfg.Data, cfg.MaxInputChars)
	var starts []Start
	if len(cfg.Starts) > 0 {
		boot := cfg.Refine.Boot
		boot.Groups = nil
		var best int
		if starts, best, err = searchStarts(ctx, env, cfg.Refine.Model, cfg.Starts, cfg.Data, cfg.Refine.Concurrency, boot); err != nil {
			return nil, err
		}
		cfg.Refine.Judge = cfg.Starts[best]
		if ablated, err = checkCalibrate(&cfg); err != nil {
			return nil, err
		}
	}
	rc, s := cfg.Refine, cfg.Refine.Judge
	one := func(rc refine.Config) (*refine.Result, error) {
		return CalibrateOne(ctx, env, st, cfg.Data, cfg.Split, rc, progress)
	}
	out := &CalibrateResult{ResultVersion: ResultVersion, Simulated: cfg.Simulated, Split: cfg.Split, Starts: starts,
		InputsCut: cutCount(cfg.Data.Train, cfg.Data.Val, cfg.Data.Test), ValRecords: len(cfg.Data.Val), ValGroups: groupCount(cfg.Data.Val)}
	var res *refine.Result
	if cfg.Repeats > 0 {
		end := func() {}
		if progress != nil {
			rc.Progress, end = progress(fmt.Sprintf("calibrate %s (%d runs)", s.Name, cfg.Repeats))
		}
		runs, sum, err := refine.Repeat(ctx, env.Client, st, cfg.Data, rc, refine.RepeatOptions{Repeats: cfg.Repeats, ResampleTrain: cfg.ResampleTrain})
		end()
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if err := st.SaveCalibration(context.WithoutCancel(ctx), s.Name, r.SelectedVersion, cfg.Split, rc.Model, r.Result); err != nil {
				return nil, err
			}
		}
		res, out.Repeats, out.RepeatsSummary = runs[0].Result, runs, sum
	} else if cfg.StartEach && len(cfg.Starts) > 1 {
		var all []*refine.Result
		for _, sp := range cfg.Starts {
			r := rc
			r.Judge = sp
			one, err := one(r)
			if err != nil {
				return nil, err
			}
			all = append(all, one)
		}
		if out.StartEach, err = selectAcrossStarts(ctx, env, cfg, all); err != nil {
			return nil, err
		}
		res = all[0]
		for i, sp := range cfg.Starts {
			if sp.Name == out.StartEach.Chosen.Start {
				res, s = all[i], sp
			}
		}
	} else if res, err = one(rc); err != nil {
		return nil, err
	}
	tag := ""
	if cfg.Simulated {
		tag = "[simulated] "
	}
	rep := &report.CalibrationReport{
		Title:     fmt.Sprintf("%sCalibration of %s on %s", tag, s.Name, cfg.Split),
		Simulated: cfg.Simulated, Split: cfg.Split, Version: cfg.GavelVersion,
		Sections: []*report.CalibrationSection{{Title: s.Name, Result: res, Records: cfg.Data.Train}},
		Repeats:  out.Repeats, RepeatSummary: out.RepeatsSummary, ValRecords: len(cfg.Data.Val),
	}
	for _, st := range starts {
		rep.Starts = append(rep.Starts, report.StartRow{Judge: st.Judge, Prompt: st.Prompt, Train: st.Train, Val: st.Val, ValGain: st.ValGain, Chosen: st.Chosen})
	}
	out.fill(res)
	if res.Panel != nil {
		out.Teachers, out.Panel = res.Panel.Teachers, res.Panel
	}
	if ablated != nil {
		rc.Judge = ablated
		res2, err := one(rc)
		if err != nil {
			return nil, err
		}
		rep.Sections = append(rep.Sections, &report.CalibrationSection{Title: s.Name + " without " + cfg.Ablate, Result: res2, Records: cfg.Data.Train})
		rep.Ablation = &report.Ablation{Input: cfg.Ablate, With: res, Without: res2}
		out.Without = res2
		out.Ablation = &Ablation{Input: cfg.Ablate, Without: res2.Summary(), TeacherWithout: res2.Teacher}
	}
	out.Calls = env.stats()
	rep.Calls = &out.Calls
	out.Report = rep
	return out, nil
}

// WriteCalibrationReports writes a calibration's report as HTML to
// htmlFile and as Markdown beside it (NAME.md for NAME.html), each through
// write.
func WriteCalibrationReports(rep *report.CalibrationReport, htmlFile string, write func(name string, fn func(io.Writer) error) error) error {
	if err := write(htmlFile, func(w io.Writer) error { return report.WriteCalibration(w, rep) }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	md := strings.TrimSuffix(htmlFile, ".html") + ".md"
	if md == htmlFile {
		md += ".md"
	}
	return write(md, func(w io.Writer) error { return report.WriteCalibrationMarkdown(w, rep) })
}

// groupCount counts the groups of records (a record without a group is
// its own).
func groupCount(rs []*record.Record) int {
	seen := map[string]bool{}
	for _, r := range rs {
		key := "g\x00" + r.Group
		if r.Group == "" {
			key = "r\x00" + r.ID
		}
		seen[key] = true
	}
	return len(seen)
}
