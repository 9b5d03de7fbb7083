package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqlite"
	"github.com/gavelhq/gavel/teacher"
)

// demoSummary is summary.json; its field names are a contract.
type demoSummary struct {
	World     string                `json:"world"`
	Simulated bool                  `json:"simulated"`
	Note      string                `json:"note"`
	Records   int                   `json:"records"`
	Seed      uint64                `json:"seed"`
	Judges    []refine.JudgeSummary `json:"judges"`
	Teacher   struct {
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
	TeacherPanel *demoPanel `json:"teacher_panel"`
	ModelCalls   struct {
		Live   int `json:"live"`
		Cached int `json:"cached"`
	} `json:"model_calls"`
	Files   map[string]string `json:"files"`
	Seconds float64           `json:"seconds"`
}

// demoPanel is summary.json's teacher panel study.
type demoPanel struct {
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

func (a *app) demoCmd() *cobra.Command {
	var out string
	var n int
	var seed uint64
	var resamples int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole AutoRefine pipeline offline on the simulated world and write a report",
		Long: `Run everything on gavel's simulated world, offline, in a fresh folder: generate
synthetic records, ingest them, split them, run the teacher, calibrate passfail
and rubric5 with their baselines, run the controls (an unreliable teacher, a
proposer of random rules), the label-noise study and the reference ablation,
and write report.html, summary.md and summary.json. Every output says
it ran on the simulated world: it shows the machinery, not any real model.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			start := time.Now()
			keep := out != ""
			if out == "" {
				d, err := os.MkdirTemp("", "gavel-demo-")
				if err != nil {
					return err
				}
				out = d
			} else if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			dbPath := filepath.Join(out, "gavel.db")
			if _, err := os.Stat(dbPath); err == nil {
				return fmt.Errorf("%s already holds a demo (gavel.db); give a new --out folder", out)
			}
			db, err := sqlite.Open(ctx, dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			sum, err := a.runDemo(ctx, db, out, n, seed, resamples)
			if err != nil {
				return err
			}
			if !keep {
				// Without --out the store (about 100 MB of cached simulated
				// answers) is not left behind in the temporary folder.
				db.Close()
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(dbPath + suffix)
				}
				sum.Files["store"] = ""
			}
			sum.Seconds = time.Since(start).Seconds()
			if err := writeAtomic(sum.Files["summary.json"], a.stdout, func(w io.Writer) error {
				return writeJSONTo(w, sum)
			}); err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(sum)
			}
			fmt.Fprintf(a.stdout, "[simulated] gavel demo: %d synthetic records, seed %d, in %.0f s\n", sum.Records, sum.Seed, sum.Seconds)
			for _, j := range sum.Judges {
				fmt.Fprintf(a.stdout, "  %-9s test pi %s -> %s (gain %s [%s]) in %d iteration(s); %d revision(s) over the %d-character cap\n", j.Judge,
					num(j.Test.Original.ScottPi), num(j.Test.Calibrated.ScottPi), num(j.Gain.ScottPi), ci(j.Gain.CI), j.Iterations, j.RevisionsOverCap, j.MaxPromptChars)
			}
			for _, c := range sum.Controls {
				fmt.Fprintf(a.stdout, "  control %-18s %-9s pi %s -> %s (gain %s [%s])\n", c.Name, c.Judge,
					num(c.Original.ScottPi), num(c.Calibrated.ScottPi), num(c.Gain.ScottPi), ci(c.Gain.CI))
			}
			fmt.Fprintf(a.stdout, "  teacher: %d kept, %d abstained, %d corrected\n", sum.Teacher.Kept, sum.Teacher.Abstained, sum.Teacher.Corrected)
			fmt.Fprintf(a.stdout, "  label noise %.1f%% -> %.1f%% after the teacher\n", 100*sum.Noise.Before, 100*sum.Noise.After)
			fmt.Fprintf(a.stdout, "  teacher abstains on %.0f%% of failures with the reference, %.0f%% without\n",
				100*sum.Ablation.TeacherAbstainFailWith, 100*sum.Ablation.TeacherAbstainFailWithout)
			fmt.Fprintf(a.stdout, "  model calls: %d live (simulated), %d from the cache\n", sum.ModelCalls.Live, sum.ModelCalls.Cached)
			fmt.Fprintf(a.stdout, "report: %s\nsummary: %s and %s\n", sum.Files["report.html"], sum.Files["summary.md"], sum.Files["summary.json"])
			if keep {
				fmt.Fprintf(a.stdout, "store: %s (keep it to rerun commands on it; it is safe to delete)\n", sum.Files["store"])
			} else {
				fmt.Fprintln(a.stdout, "store: removed (give --out DIR to keep it)")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder for the demo's store and reports, all kept (default: a new temporary folder, whose store is removed at the end)")
	cmd.Flags().IntVar(&n, "n", 1200, "synthetic records")
	cmd.Flags().Uint64Var(&seed, "seed", 3, "seed of the simulated world")
	cmd.Flags().IntVar(&resamples, "resamples", 2000, "bootstrap resamples")
	return cmd
}

func num(v *float64) string {
	if v == nil {
		return "undefined"
	}
	return fmt.Sprintf("%.3f", *v)
}

func ci(v []float64) string {
	if len(v) != 2 {
		return "no interval"
	}
	return fmt.Sprintf("%.3f, %.3f", v[0], v[1])
}

func writeJSONTo(w io.Writer, v any) error {
	a := &app{stdout: w}
	return a.writeJSON(v)
}

func (a *app) runDemo(ctx context.Context, db store.Store, out string, n int, seed uint64, resamples int) (*demoSummary, error) {
	step := func(format string, args ...any) { fmt.Fprintf(a.stderr, "[simulated] demo: "+format+"\n", args...) }
	step("generating %d synthetic records (seed %d)", n, seed)
	rs, err := sim.Records(sim.WorldOptions{N: n, Seed: seed})
	if err != nil {
		return nil, err
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
		return nil, err
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: "main", Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1,
		ExcludeStatus: []record.Status{record.StatusDraft}})
	if err != nil {
		return nil, err
	}
	if err := db.SaveSplit(ctx, split, false); err != nil {
		return nil, err
	}
	data, err := loadParts(ctx, db, "main", []string{"draft"}, 0)
	if err != nil {
		return nil, err
	}
	step("split: %d train, %d val, %d test records", len(data.Train), len(data.Val), len(data.Test))
	reg := registry()
	svc := llm.NewService(reg, db.Cache(), llm.Options{Offline: true}) // sim is local: nothing leaves the machine
	boot := metrics.BootstrapOptions{Resamples: resamples, Seed: 1}
	rep := &report.CalibrationReport{Title: "[simulated] gavel demo: calibrating judges on the simulated world",
		Simulated: true, Split: "main (synthetic records of the simulated world)", Version: buildVersion().Version}
	sum := &demoSummary{World: "sim", Simulated: true, Records: n, Seed: seed,
		Note: "Ran on gavel's simulated world (--model sim): a test double that exercises the machinery, not evidence about any real model."}
	var passfailRes *refine.Result
	for _, name := range []string{"passfail", "rubric5"} {
		s, err := judge.Load(name)
		if err != nil {
			return nil, err
		}
		step("calibrating %s", name)
		res, err := run.CalibrateOne(ctx, a.env(db, svc), db, data, "main", demoConfig(s, "sim", "sim", boot), a.stageProgress)
		if err != nil {
			return nil, err
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
				return nil, err
			}
			step("control %s: calibrating %s (teacher %s, editor %s)", c.Name, name, c.TeacherModel, c.EditorModel)
			res, err := run.CalibrateOne(ctx, a.env(db, svc), db, data, "main", demoConfig(s, c.TeacherModel, c.EditorModel, boot), a.stageProgress)
			if err != nil {
				return nil, err
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
		return nil, err
	}
	abl, err := run.CalibrateOne(ctx, a.env(db, svc), db, data, "main", demoConfig(noRef, "sim", "sim", boot), a.stageProgress)
	if err != nil {
		return nil, err
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
	cfg := demoConfig(s, "sim", "sim", boot)
	cfg.MaxIter, cfg.LabelBlind = 1, true
	cfg.TeacherModels = []string{"sim:family=a,consistent", "sim:family=b,consistent,teacher-error=0.05", sycophant}
	cfg.Quorum = teacher.Quorum{Rule: "majority"}
	panel, err := run.CalibrateOne(ctx, a.env(db, svc), db, data, "main", cfg, a.stageProgress)
	if err != nil {
		return nil, err
	}
	rep.Sections = append(rep.Sections, &report.CalibrationSection{Title: "passfail with a teacher panel (majority; one teacher keeps every label)",
		Result: panel, Records: data.Train})
	sum.TeacherPanel = &demoPanel{Quorum: "majority", Sycophant: sycophant, Teachers: panel.Panel.Teachers, Panel: panel.Panel,
		LabelBlind: panel.Blind, KeptAlone: panel.Panel.Teachers[2].Kept, KeptPanel: panel.Teacher.Kept}

	step("label-noise study: flipping 25%% of training labels")
	nr, err := refine.NoiseStudy(ctx, svc, s, "sim", data.Train, 0.25, seed, 8)
	if err != nil {
		return nil, err
	}
	rep.Noise = nr
	sum.Noise.Flip, sum.Noise.Before, sum.Noise.After = nr.Flip, nr.Before, nr.After

	calls := svc.Stats()
	rep.Calls = &calls
	sum.ModelCalls.Live, sum.ModelCalls.Cached = calls.Sent, calls.CacheHits
	sum.Files = map[string]string{
		"report.html":  filepath.Join(out, "report.html"),
		"summary.md":   filepath.Join(out, "summary.md"),
		"summary.json": filepath.Join(out, "summary.json"),
		"store":        filepath.Join(out, "gavel.db"),
	}
	if err := writeAtomic(sum.Files["report.html"], a.stdout, func(w io.Writer) error { return report.WriteCalibration(w, rep) }); err != nil {
		return nil, err
	}
	if err := writeAtomic(sum.Files["summary.md"], a.stdout, func(w io.Writer) error { return report.WriteCalibrationMarkdown(w, rep) }); err != nil {
		return nil, err
	}
	return sum, nil
}

// demoConfig is a calibration of the demo: the simulated model judges, at
// most five iterations, eight calls at once.
func demoConfig(s *judge.Spec, teacherModel, editorModel string, boot metrics.BootstrapOptions) refine.Config {
	return refine.Config{Judge: s, Model: "sim", TeacherModel: teacherModel, EditorModel: editorModel, MaxIter: 5,
		Concurrency: 8, Boot: boot}
}
