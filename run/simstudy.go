package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/teacher"
)

// SimStudyConfig configures a study over simulated worlds (gavel sim
// study): the demo's honest calibration and its controls, run in each of
// Worlds worlds (seeds FirstSeed, FirstSeed+1, ...), each drawing its own
// truth.
type SimStudyConfig struct {
	Worlds    int
	FirstSeed uint64
	// N records a world; Resamples for every interval; MaxIter for every
	// calibration (default 5, the demo's).
	N, Resamples, MaxIter int
	Judges                []string // default passfail and rubric5
	// World gives a seed's truth (nil: sim.NewWorld, drawn from the
	// priors).
	World func(seed uint64) *sim.World
	Log   func(line string)
	// Open gives a world a fresh store and its environment (records of
	// different worlds share ids); done is called when the world is done.
	// Without it, each world's store is made by OpenStore in a temporary
	// folder removed at the end, the model answering through Registry.
	Open      func(ctx context.Context, seed uint64) (db DemoStore, env *Env, done func(), err error)
	OpenStore func(ctx context.Context, path string) (WorldStore, error)
	Registry  *llm.Registry
	// Keep, when set, is the folder where each world's store is kept
	// (world-SEED.db) instead of a temporary one, with every calibration
	// saved as a run that opens down to its records (gavel view).
	Keep         string
	GavelVersion string
}

// SimStudyResult is gavel sim study's --json output; field names are a
// contract.
type SimStudyResult struct {
	ResultVersion int    `json:"result_version"`
	Simulated     bool   `json:"simulated"`
	Note          string `json:"note"`
	Records       int    `json:"records_per_world"`
	// Worlds are the runs, one a world; Controls each control's gain over
	// the worlds; Differences the honest gain minus each other control's,
	// world by world.
	Worlds      []WorldRun         `json:"worlds"`
	Controls    []ControlOverWorld `json:"controls"`
	Differences []ControlOverWorld `json:"differences"`
	// Teacher is the honest teacher over the worlds: the most it
	// corrected (a share of a world's training records) and in how many
	// worlds the label noise rose after it.
	Teacher struct {
		MostCorrected     float64 `json:"most_corrected_share"`
		NoiseRose         int     `json:"worlds_noise_rose"`
		InjectedNoiseRose int     `json:"worlds_injected_noise_not_reduced"`
	} `json:"teacher"`
}

// WorldRun is one world of a study.
type WorldRun struct {
	Seed uint64 `json:"seed"`
	// Fatal are the world's fatal signals; Surprises those whose effect
	// here is not the one most worlds give them.
	Fatal     []string `json:"fatal"`
	Surprises []string `json:"surprises"`
	Train     int      `json:"train"`
	// Store is the world's kept store (with --keep), whose runs are its
	// calibrations.
	Store string `json:"store,omitempty"`
	// Teacher is the honest teacher on passfail's training records:
	// its decisions, and the share of labels that disagree with the
	// world's truth about the code (a failure with no fatal signal, a
	// pass with one) before and after it.
	Teacher struct {
		Kept           int     `json:"kept"`
		Abstained      int     `json:"abstained"`
		Corrected      int     `json:"corrected"`
		CorrectedShare float64 `json:"corrected_share"`
		NoiseBefore    float64 `json:"noise_before"`
		NoiseAfter     float64 `json:"noise_after"`
		// InjectedBefore and InjectedAfter are the label-noise study's
		// (the paper's): a quarter of the training labels flipped, and the
		// share of the labels the teacher keeps that are not the recorded
		// ones.
		InjectedBefore float64 `json:"injected_noise_before"`
		InjectedAfter  float64 `json:"injected_noise_after"`
	} `json:"teacher"`
	Gains []WorldGain `json:"gains"`
}

// WorldGain is one calibration's test gain in Scott's pi in one world.
type WorldGain struct {
	Control string         `json:"control"`
	Judge   string         `json:"judge"`
	Gain    metrics.Figure `json:"gain"`
	// Run is the calibration's run in the world's kept store.
	Run string `json:"run,omitempty"`
}

// ControlOverWorld is a figure's distribution over the worlds: its mean
// (with a bootstrap interval over worlds), range, and how many worlds'
// own intervals lie above or below 0.
type ControlOverWorld struct {
	Control string         `json:"control"`
	Judge   string         `json:"judge"`
	Worlds  int            `json:"worlds"`
	Mean    metrics.Figure `json:"mean"`
	Min     float64        `json:"min"`
	Max     float64        `json:"max"`
	// Above and Below count worlds whose interval excludes 0 (for a
	// difference: worlds where it is positive and negative).
	Above int `json:"above_zero"`
	Below int `json:"below_zero"`
}

// SimStudy runs the study, world by world.
func SimStudy(ctx context.Context, cfg SimStudyConfig) (*SimStudyResult, error) {
	if cfg.Worlds < 2 {
		return nil, deploy.FieldErrorf("worlds", "a study over worlds needs at least 2 worlds, not %d", cfg.Worlds)
	}
	if cfg.N < 100 {
		// Each part of a world's split must hold both labels.
		return nil, deploy.FieldErrorf("n", "a world needs at least 100 records to split into train, validation and test, not %d", cfg.N)
	}
	if cfg.MaxIter <= 0 {
		cfg.MaxIter = 5
	}
	if len(cfg.Judges) == 0 {
		cfg.Judges = []string{"passfail", "rubric5"}
	}
	if cfg.Open == nil {
		dir := cfg.Keep
		if dir == "" {
			tmp, err := os.MkdirTemp("", "gavel-study-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cfg.Open = WorldStores(dir, cfg.Registry, cfg.OpenStore)
	}
	log := func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf(format, args...))
		}
	}
	out := &SimStudyResult{ResultVersion: ResultVersion, Simulated: true, Records: cfg.N,
		Note: "Ran on gavel's simulated world (--model sim), each world drawing which signals are fatal: a test of the machinery, not evidence about any real model."}
	boot := metrics.BootstrapOptions{Resamples: cfg.Resamples, Seed: 1}
	for k := range cfg.Worlds {
		seed := cfg.FirstSeed + uint64(k)
		w, err := studyWorld(ctx, cfg, seed, boot, log)
		if err != nil {
			return nil, fmt.Errorf("world %d: %w", seed, err)
		}
		if cfg.Keep != "" {
			w.Store = filepath.Join(cfg.Keep, fmt.Sprintf("world-%d.db", seed))
		}
		out.Worlds = append(out.Worlds, *w)
		out.Teacher.MostCorrected = max(out.Teacher.MostCorrected, w.Teacher.CorrectedShare)
		if w.Teacher.NoiseAfter > w.Teacher.NoiseBefore {
			out.Teacher.NoiseRose++
		}
		if w.Teacher.InjectedAfter >= w.Teacher.InjectedBefore {
			out.Teacher.InjectedNoiseRose++
		}
	}
	for _, c := range sim.Controls {
		for _, j := range cfg.Judges {
			var gains []float64
			above, below := 0, 0
			for _, w := range out.Worlds {
				for _, g := range w.Gains {
					if g.Control != c.Name || g.Judge != j || !g.Gain.Value.Defined() {
						continue
					}
					gains = append(gains, g.Gain.Value.V)
					if g.Gain.CI != nil && g.Gain.CI.Lo > 0 {
						above++
					}
					if g.Gain.CI != nil && g.Gain.CI.Hi < 0 {
						below++
					}
				}
			}
			out.Controls = append(out.Controls, overWorlds(c.Name, j, gains, above, below, boot))
		}
	}
	for _, c := range sim.Controls[1:] {
		for _, j := range cfg.Judges {
			var diffs []float64
			for _, w := range out.Worlds {
				h, ok1 := gainOf(w, sim.Controls[0].Name, j)
				o, ok2 := gainOf(w, c.Name, j)
				if ok1 && ok2 {
					diffs = append(diffs, h-o)
				}
			}
			above, below := 0, 0
			for _, d := range diffs {
				if d > 0 {
					above++
				} else if d < 0 {
					below++
				}
			}
			out.Differences = append(out.Differences, overWorlds("honest - "+c.Name, j, diffs, above, below, boot))
		}
	}
	return out, nil
}

func gainOf(w WorldRun, control, judgeName string) (float64, bool) {
	for _, g := range w.Gains {
		if g.Control == control && g.Judge == judgeName && g.Gain.Value.Defined() {
			return g.Gain.Value.V, true
		}
	}
	return 0, false
}

// overWorlds is a figure's distribution over worlds, its mean's interval
// from resampling the worlds.
func overWorlds(control, judgeName string, xs []float64, above, below int, boot metrics.BootstrapOptions) ControlOverWorld {
	c := ControlOverWorld{Control: control, Judge: judgeName, Worlds: len(xs), Above: above, Below: below}
	if len(xs) == 0 {
		c.Mean = metrics.Figure{Value: metrics.Undef("no world gave a value"), Undefined: "no world gave a value"}
		return c
	}
	c.Min, c.Max = slices.Min(xs), slices.Max(xs)
	mean := func(idx []int) metrics.Value {
		s := 0.0
		for _, i := range idx {
			s += xs[i]
		}
		return metrics.Def(s / float64(len(idx)))
	}
	c.Mean = metrics.WithCI(len(xs), mean, boot)
	return c
}

// studyWorld runs one world: its records, the honest calibration and the
// controls for each judge, and the honest teacher's figures.
func studyWorld(ctx context.Context, cfg SimStudyConfig, seed uint64, boot metrics.BootstrapOptions, log func(string, ...any)) (*WorldRun, error) {
	db, env, done, err := cfg.Open(ctx, seed)
	if err != nil {
		return nil, err
	}
	defer done()
	world := sim.NewWorld(seed)
	if cfg.World != nil {
		world = cfg.World(seed)
	}
	w := &WorldRun{Seed: seed, Fatal: world.Fatal(), Surprises: world.Surprises()}
	log("world %d (%s)", seed, world)
	data, err := simData(ctx, db, sim.WorldOptions{N: cfg.N, Seed: seed, World: world})
	if err != nil {
		return nil, err
	}
	w.Train = len(data.Train)
	for _, c := range sim.Controls {
		for _, name := range cfg.Judges {
			s, err := judge.Load(name)
			if err != nil {
				return nil, err
			}
			rc := demoConfig(s, c.TeacherModel, c.EditorModel, boot)
			rc.MaxIter = cfg.MaxIter
			log("world %d: %s, %s", seed, c.Name, name)
			start := time.Now()
			res, err := CalibrateOne(ctx, env, db, data, "main", rc, nil)
			if err != nil {
				return nil, err
			}
			g := WorldGain{Control: c.Name, Judge: name, Gain: res.Gain["scott_pi"]}
			if rs, ok := db.(runlog.Store); ok && cfg.Keep != "" {
				// Opened with gavel view, the calibration shows its
				// records, verdicts and the teacher's reasons.
				cr := &CalibrateResult{ResultVersion: ResultVersion, Simulated: true, Split: "main", ValRecords: len(data.Val), ValGroups: groupCount(data.Val)}
				cr.fill(res)
				run, err := SaveRun(ctx, rs, cr, runlog.Run{Command: "sim study: " + c.Name, StartedAt: start, EndedAt: time.Now(),
					GavelVersion: cfg.GavelVersion, Simulated: true, Models: map[string]string{c.TeacherModel: "", c.EditorModel: ""}})
				if err != nil {
					return nil, err
				}
				g.Run = run.ID
			}
			w.Gains = append(w.Gains, g)
			if c.Name == sim.Controls[0].Name && name == cfg.Judges[0] {
				t := res.Teacher
				w.Teacher.Kept, w.Teacher.Abstained, w.Teacher.Corrected = t.Kept, t.Abstained, t.Corrected
				w.Teacher.CorrectedShare = float64(t.Corrected) / float64(max(len(data.Train), 1))
				w.Teacher.NoiseBefore, w.Teacher.NoiseAfter = labelNoise(data.Train, res.Decisions)
				nr, err := refine.NoiseStudy(ctx, env.Client, s, c.TeacherModel, data.Train, 0.25, seed, 8)
				if err != nil {
					return nil, err
				}
				w.Teacher.InjectedBefore, w.Teacher.InjectedAfter = nr.Before, nr.After
			}
		}
	}
	return w, nil
}

// labelNoise is the share of training labels that disagree with the
// world's truth about the code (a failure without a fatal signal, a pass
// with one), before the teacher and among the labels it leaves (kept or
// corrected).
func labelNoise(train []*record.Record, ds []teacher.Decision) (before, after float64) {
	fatal := map[string]bool{}
	for _, r := range train {
		var m struct{ Sim sim.Truth }
		json.Unmarshal(r.Meta, &m)
		fatal[r.ID] = m.Sim.Fatal
	}
	wrong := func(id string, l record.Label) bool { return (l == record.Fail) != fatal[id] }
	n := 0
	for _, r := range train {
		if wrong(r.ID, r.Outcome.Label) {
			n++
		}
	}
	before = float64(n) / float64(max(len(train), 1))
	left, bad := 0, 0
	for _, d := range ds {
		if d.Action == teacher.Abstain {
			continue
		}
		left++
		if wrong(d.RecordID, d.Label) {
			bad++
		}
	}
	return before, float64(bad) / float64(max(left, 1))
}

// WriteText writes the study as the README shows it: each control's test
// gain in Scott's pi over the worlds, the honest gain's lead over each
// other control, and the teacher's figures.
func (r *SimStudyResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "[simulated] %d worlds (seeds %d-%d), %d records each; test gain in Scott's pi over the original prompt\n\n",
		len(r.Worlds), r.Worlds[0].Seed, r.Worlds[len(r.Worlds)-1].Seed, r.Records)
	fmt.Fprintln(w, "| configuration | judge | mean over worlds [95% interval] | range | worlds whose own interval is above 0 / below 0 |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(c ControlOverWorld, counts string) {
		mean := c.Mean.Value.String()
		if c.Mean.CI != nil {
			mean = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", c.Mean.Value.V, c.Mean.CI.Lo, c.Mean.CI.Hi)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %+.3f to %+.3f | %s |\n", c.Control, c.Judge, mean, c.Min, c.Max, counts)
	}
	for _, c := range r.Controls {
		row(c, fmt.Sprintf("%d / %d of %d", c.Above, c.Below, c.Worlds))
	}
	for _, c := range r.Differences {
		row(c, fmt.Sprintf("ahead in %d, behind in %d of %d", c.Above, c.Below, c.Worlds))
	}
	fmt.Fprintf(w, "\nThe honest teacher corrected at most %.1f%% of a world's training records; label noise (against the code's truth) rose after it in %d of %d worlds; with a quarter of the labels flipped, it failed to reduce the noise in %d.\n",
		100*r.Teacher.MostCorrected, r.Teacher.NoiseRose, len(r.Worlds), r.Teacher.InjectedNoiseRose)
	return nil
}

// WorldStore is a world's store in a study: the demo's, with its model
// cache.
type WorldStore interface {
	Store
	DemoStore
	Cache() llm.Cache
	Close() error
}

// WorldStores opens each world a fresh store in dir (open makes one at a
// path), the simulated model answering offline through its cache: a
// SimStudyConfig's Open.
func WorldStores(dir string, reg *llm.Registry, open func(ctx context.Context, path string) (WorldStore, error)) func(ctx context.Context, seed uint64) (DemoStore, *Env, func(), error) {
	return func(ctx context.Context, seed uint64) (DemoStore, *Env, func(), error) {
		db, err := open(ctx, filepath.Join(dir, fmt.Sprintf("world-%d.db", seed)))
		if err != nil {
			return nil, nil, nil, err
		}
		svc := llm.NewService(reg, db.Cache(), llm.Options{Offline: true})
		return db, &Env{Store: db, Client: svc, Stats: svc.Stats}, func() { db.Close() }, nil
	}
}

// WriteHTML writes the study's page (gavel sim study --report).
func (r *SimStudyResult) WriteHTML(w io.Writer) error {
	rep := &report.SimStudyReport{Title: "[simulated] gavel sim study: calibration over worlds", Records: r.Records}
	iv := func(c ControlOverWorld) report.Interval {
		row := report.Interval{Name: c.Control + ", " + c.Judge, Defined: c.Mean.Value.Defined(), Value: c.Mean.Value.V, Lo: c.Mean.Value.V, Hi: c.Mean.Value.V}
		if c.Mean.CI != nil {
			row.Lo, row.Hi = c.Mean.CI.Lo, c.Mean.CI.Hi
		}
		return row
	}
	for _, c := range r.Controls {
		rep.Gains = append(rep.Gains, iv(c))
	}
	for _, c := range r.Differences {
		rep.Differences = append(rep.Differences, iv(c))
	}
	for _, w := range r.Worlds {
		t := w.Teacher
		sw := report.StudyWorld{Seed: w.Seed, Surprises: strings.Join(w.Surprises, ", "), Store: w.Store,
			Kept: t.Kept, Abstained: t.Abstained, Corrected: t.Corrected,
			Noise: fmt.Sprintf("%.3f -> %.3f", t.NoiseBefore, t.NoiseAfter), Injected: fmt.Sprintf("%.3f -> %.3f", t.InjectedBefore, t.InjectedAfter)}
		for _, g := range w.Gains {
			v := g.Gain.Value.String()
			if g.Gain.CI != nil {
				v = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", g.Gain.Value.V, g.Gain.CI.Lo, g.Gain.CI.Hi)
			}
			sw.Gains = append(sw.Gains, report.StudyGain{Name: g.Control + " " + g.Judge, Value: v, Run: g.Run})
		}
		rep.Worlds = append(rep.Worlds, sw)
	}
	return report.WriteSimStudy(w, rep)
}
