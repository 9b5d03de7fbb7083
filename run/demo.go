package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/teacher"
)

// DemoConfig configures the demo.
type DemoConfig struct {
	// N synthetic records of the world of Seed.
	N         int
	Seed      uint64
	Resamples int
	// Log hears each step, one line at a time.
	Log          func(line string)
	GavelVersion string
}

// DemoStore is the demo's store: it imports the records and splits them,
// and keeps the calibrations.
type DemoStore interface {
	CalibrationStore
	record.Store
}

// DemoResult is the demo's summary.json and its --json output; field
// names are a contract.
type DemoResult struct {
	ResultVersion int                   `json:"result_version"`
	World         string                `json:"world"`
	Simulated     bool                  `json:"simulated"`
	Note          string                `json:"note"`
	Records       int                   `json:"records"`
	Seed          uint64                `json:"seed"`
	Judges        []refine.JudgeSummary `json:"judges"`
	Teacher       struct {
		Kept      int `json:"kept"`
		Abstained int `json:"abstained"`
		Corrected int `json:"corrected"`
		// Rates of abstention on failures and passes.
		AbstainOnFail float64 `json:"abstain_rate_fail"`
		AbstainOnPass float64 `json:"abstain_rate_pass"`
	} `json:"teacher"`
	Noise struct {
		Flip   float64 `json:"flip"`
		Before float64 `json:"before"`
		After  float64 `json:"after"`
	} `json:"noise"`
	Ablation struct {
		Input                     string   `json:"input"`
		TeacherAbstainFailWith    float64  `json:"teacher_abstain_rate_fail_with"`
		TeacherAbstainFailWithout float64  `json:"teacher_abstain_rate_fail_without"`
		CalibratedPiWith          *float64 `json:"calibrated_scott_pi_with"`
		CalibratedPiWithout       *float64 `json:"calibrated_scott_pi_without"`
	} `json:"ablation"`
	// Controls are the same calibrations with other simulated teachers or
	// proposers, the honest configuration first.
	Controls []refine.ControlSummary `json:"controls"`
	// TeacherPanel is passfail's teacher stage with a teacher that keeps
	// every label alone, then in a majority panel with two sound teachers
	// of other families, each checked label-blind.
	TeacherPanel *DemoPanel `json:"teacher_panel"`
	ModelCalls   struct {
		Live   int `json:"live"`
		Cached int `json:"cached"`
	} `json:"model_calls"`
	Files   map[string]string `json:"files"`
	Seconds float64           `json:"seconds"`
}

// DemoPanel is summary.json's teacher panel study.
type DemoPanel struct {
	Quorum     string                `json:"quorum"`
	Sycophant  string                `json:"sycophant"`
	Teachers   []teacher.MemberStats `json:"teachers"`
	Panel      *teacher.PanelStats   `json:"panel"`
	LabelBlind []teacher.BlindStats  `json:"label_blind"`
	// Kept are the training records the sycophant kept (deciding alone,
	// as a panel member does) and the panel kept; the panel's calibration
	// ran one iteration.
	KeptAlone int `json:"kept_by_sycophant_alone"`
	KeptPanel int `json:"kept_by_panel"`
}

// Demo runs the whole AutoRefine pipeline on the simulated world into an
// empty store: records, a split, both judges calibrated with their
// baselines, the controls, the reference ablation, a teacher panel and the
// label-noise study. It returns the summary and the report's content.
func Demo(ctx context.Context, env *Env, db DemoStore, cfg DemoConfig, progress func(title string) (func(stage string, done, total int), func())) (*DemoResult, *report.CalibrationReport, error) {
	n, seed, resamples := cfg.N, cfg.Seed, cfg.Resamples
	step := func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf(format, args...))
		}
	}
	step("generating %d synthetic records (seed %d)", n, seed)
	data, err := simData(ctx, db, sim.WorldOptions{N: n, Seed: seed})
	if err != nil {
		return nil, nil, err
	}
	step("split: %d train, %d val, %d test records", len(data.Train), len(data.Val), len(data.Test))
	boot := metrics.BootstrapOptions{Resamples: resamples, Seed: 1}
	rep := &report.CalibrationReport{Title: "[simulated] gavel demo: calibrating judges on the simulated world",
		Simulated: true, Split: "main (synthetic records of the simulated world)", Version: cfg.GavelVersion}
	sum := &DemoResult{ResultVersion: ResultVersion, World: "sim", Simulated: true, Records: n, Seed: seed,
		Note: "Ran on gavel's simulated world (--model sim): a test double that exercises the machinery, not evidence about any real model."}
	var passfailRes *refine.Result
	for _, name := range []string{"passfail", "rubric5"} {
		s, err := judge.Load(name)
		if err != nil {
			return nil, nil, err
		}
		step("calibrating %s", name)
		res, err := CalibrateOne(ctx, env, db, data, "main", demoConfig(s, "sim", "sim", boot), progress)
		if err != nil {
			return nil, nil, err
		}
		if name == "passfail" {
			passfailRes = res
		}
		rep.Sections = append(rep.Sections, &report.CalibrationSection{Title: name, Result: res, Records: data.Train})
		sum.Judges = append(sum.Judges, res.Summary())
	}
	honest := sim.Controls[0]
	for _, sec := range rep.Sections {
		res := sec.Result
		rep.Controls = append(rep.Controls, &report.Control{Name: honest.Name, Description: honest.Description,
			TeacherModel: honest.TeacherModel, EditorModel: honest.EditorModel, Result: res})
		sum.Controls = append(sum.Controls, res.Control(honest.Name, honest.TeacherModel, honest.EditorModel))
	}
	for _, c := range sim.Controls[1:] {
		for _, name := range []string{"passfail", "rubric5"} {
			s, err := judge.Load(name)
			if err != nil {
				return nil, nil, err
			}
			step("control %s: calibrating %s (teacher %s, editor %s)", c.Name, name, c.TeacherModel, c.EditorModel)
			res, err := CalibrateOne(ctx, env, db, data, "main", demoConfig(s, c.TeacherModel, c.EditorModel, boot), progress)
			if err != nil {
				return nil, nil, err
			}
			rep.Controls = append(rep.Controls, &report.Control{Name: c.Name, Description: c.Description,
				TeacherModel: c.TeacherModel, EditorModel: c.EditorModel, Result: res})
			sum.Controls = append(sum.Controls, res.Control(c.Name, c.TeacherModel, c.EditorModel))
		}
	}
	t := passfailRes.Teacher
	sum.Teacher.Kept, sum.Teacher.Abstained, sum.Teacher.Corrected = t.Kept, t.Abstained, t.Corrected
	sum.Teacher.AbstainOnFail, sum.Teacher.AbstainOnPass = t.AbstainByLabel[record.Fail], t.AbstainByLabel[record.Pass]

	step("reference ablation: calibrating passfail without the reference")
	s, _ := judge.Load("passfail")
	noRef, err := s.WithInputs([]string{"task", "candidate"})
	if err != nil {
		return nil, nil, err
	}
	abl, err := CalibrateOne(ctx, env, db, data, "main", demoConfig(noRef, "sim", "sim", boot), progress)
	if err != nil {
		return nil, nil, err
	}
	rep.Sections = append(rep.Sections, &report.CalibrationSection{Title: "passfail without the reference", Result: abl, Records: data.Train})
	rep.Ablation = &report.Ablation{Input: "reference", With: passfailRes, Without: abl}
	sum.Ablation.Input = "reference"
	sum.Ablation.TeacherAbstainFailWith = passfailRes.Teacher.AbstainByLabel[record.Fail]
	sum.Ablation.TeacherAbstainFailWithout = abl.Teacher.AbstainByLabel[record.Fail]
	sum.Ablation.CalibratedPiWith = sum.Judges[0].Test.Calibrated.ScottPi
	sum.Ablation.CalibratedPiWithout = abl.Summary().Test.Calibrated.ScottPi

	sycophant := "sim:family=c,consistent,sycophant=1"
	step("teacher panel: a teacher that keeps every label, alone and in a majority panel")
	pc := demoConfig(s, "sim", "sim", boot)
	pc.MaxIter, pc.LabelBlind = 1, true
	pc.TeacherModels = []string{"sim:family=a,consistent", "sim:family=b,consistent,teacher-error=0.05", sycophant}
	pc.Quorum = teacher.Quorum{Rule: "majority"}
	panel, err := CalibrateOne(ctx, env, db, data, "main", pc, progress)
	if err != nil {
		return nil, nil, err
	}
	rep.Sections = append(rep.Sections, &report.CalibrationSection{Title: "passfail with a teacher panel (majority; one teacher keeps every label)",
		Result: panel, Records: data.Train})
	sum.TeacherPanel = &DemoPanel{Quorum: "majority", Sycophant: sycophant, Teachers: panel.Panel.Teachers, Panel: panel.Panel,
		LabelBlind: panel.Blind, KeptAlone: panel.Panel.Teachers[2].Kept, KeptPanel: panel.Teacher.Kept}

	step("label-noise study: flipping 25%% of training labels")
	nr, err := refine.NoiseStudy(ctx, env.Client, s, "sim", data.Train, 0.25, seed, 8)
	if err != nil {
		return nil, nil, err
	}
	rep.Noise = nr
	sum.Noise.Flip, sum.Noise.Before, sum.Noise.After = nr.Flip, nr.Before, nr.After

	calls := env.stats()
	rep.Calls = &calls
	sum.ModelCalls.Live, sum.ModelCalls.Cached = calls.Sent, calls.CacheHits
	return sum, rep, nil
}

// simData imports a simulated world's records into an empty store and
// splits them (train 0.4, validation 0.3, test 0.3, drafts left out) as
// split "main".
func simData(ctx context.Context, db DemoStore, opt sim.WorldOptions) (refine.Data, error) {
	rs, err := sim.Records(opt)
	if err != nil {
		return refine.Data{}, err
	}
	var members []record.Member
	err = db.Import(ctx, func(w record.Writer) error {
		for i := range rs {
			if _, err := w.Put(ctx, &rs[i]); err != nil {
				return err
			}
			if rs[i].Outcome.Status != record.StatusDraft {
				members = append(members, record.MemberOf(&rs[i]))
			}
		}
		return nil
	})
	if err != nil {
		return refine.Data{}, err
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: "main", Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1,
		ExcludeStatus: []record.Status{record.StatusDraft}})
	if err != nil {
		return refine.Data{}, err
	}
	if err := db.SaveSplit(ctx, split, false); err != nil {
		return refine.Data{}, err
	}
	return Parts(ctx, db, "split", "main", []record.Status{record.StatusDraft}, 0)
}

// DemoFolder makes the demo's folder: out (made if need be, and refused
// if it already holds a demo's store), or a new temporary folder when out
// is empty. It returns the folder and the store's path in it.
func DemoFolder(out string) (dir, dbPath string, err error) {
	if out == "" {
		if out, err = os.MkdirTemp("", "gavel-demo-"); err != nil {
			return "", "", err
		}
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		return "", "", err
	}
	dbPath = filepath.Join(out, "gavel.db")
	if _, err := os.Stat(dbPath); err == nil {
		return "", "", fmt.Errorf("%s already holds a demo (gavel.db); give a new --out folder", out)
	}
	return out, dbPath, nil
}

// RemoveStoreFiles removes a closed SQLite store's files (the database,
// its write-ahead log and shared memory).
func RemoveStoreFiles(dbPath string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(dbPath + suffix)
	}
}

// demoConfig is a calibration of the demo: the simulated model judges, at
// most five iterations, eight calls at once.
func demoConfig(s *judge.Spec, teacherModel, editorModel string, boot metrics.BootstrapOptions) refine.Config {
	return refine.Config{Judge: s, Model: "sim", TeacherModel: teacherModel, EditorModel: editorModel, MaxIter: 5,
		Concurrency: 8, Boot: boot}
}

// WriteDemoReports names the demo's files in folder out and writes its
// report (report.html) and summary (summary.md) through write; summary.json
// is written last, by the caller, once the result is complete.
func WriteDemoReports(sum *DemoResult, rep *report.CalibrationReport, out string, write func(name string, fn func(io.Writer) error) error) error {
	sum.Files = map[string]string{}
	for _, f := range []string{"report.html", "summary.md", "summary.json"} {
		sum.Files[f] = filepath.Join(out, f)
	}
	sum.Files["store"] = filepath.Join(out, "gavel.db")
	if err := write(sum.Files["report.html"], func(w io.Writer) error { return report.WriteCalibration(w, rep) }); err != nil {
		return err
	}
	return write(sum.Files["summary.md"], func(w io.Writer) error { return report.WriteCalibrationMarkdown(w, rep) })
}
