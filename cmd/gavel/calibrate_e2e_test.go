package main_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gavelhq/gavel/bench/perturb"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/sim"
)

// simAnswer answers an OpenAI chat request the way the simulated model
// would, so a fake OpenAI server (or batch runner) behaves like the
// simulated world while gavel goes through the real provider path.
func simAnswer(t *testing.T) func(c *llmtest.Call) string { return simAnswerWith(t, sim.Model{}) }

// simAnswerWith is simAnswer with a given simulated model (e.g. one whose
// generator knows the instructions' references).
func simAnswerWith(t *testing.T, m sim.Model) func(c *llmtest.Call) string {
	return func(c *llmtest.Call) string {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Temperature    *float64 `json:"temperature"`
			Seed           *int64   `json:"seed"`
			ResponseFormat *struct {
				JSONSchema struct {
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.Unmarshal(c.Body, &body); err != nil {
			t.Errorf("fake server: %v", err)
			return ""
		}
		req := &llm.Request{Model: "sim", Temperature: body.Temperature, Seed: body.Seed}
		for _, msg := range body.Messages {
			req.Messages = append(req.Messages, llm.Message{Role: llm.Role(msg.Role), Content: msg.Content})
		}
		if rf := body.ResponseFormat; rf != nil {
			req.Schema = &llm.Schema{Name: rf.JSONSchema.Name, JSON: rf.JSONSchema.Schema}
		}
		resp, err := m.Complete(context.Background(), "", req)
		if err != nil {
			t.Errorf("sim: %v", err)
			return ""
		}
		return resp.Text
	}
}

// answerPending exports the store's pending requests as an OpenAI batch,
// answers it with answer (a fake batch runner) and imports the results.
func answerPending(t *testing.T, db, dir string, answer func(c *llmtest.Call) string) {
	t.Helper()
	reqs := filepath.Join(dir, "requests.jsonl")
	mustGavel(t, db, "batch", "export", "--pending", "--format", "openai", "-o", reqs)
	in, err := os.Open(reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	results := filepath.Join(dir, "results.jsonl")
	f, err := os.Create(results)
	if err != nil {
		t.Fatal(err)
	}
	err = llmtest.AnswerOpenAIBatch(in, f, llmtest.BatchOptions{Answer: answer})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var imp struct{ Imported, Failed int }
	decodeJSON(t, mustGavel(t, db, "batch", "import", results, "--json"), &imp)
	if imp.Imported == 0 || imp.Failed != 0 {
		t.Fatalf("batch import %+v", imp)
	}
}

func simStore(t *testing.T, dir string, n int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "gavel.db")
	world := filepath.Join(dir, "world.jsonl")
	mustGavel(t, db, "sim", "records", "--n", itoa(n), "--seed", "4", "-o", world)
	mustGavel(t, db, "ingest", world)
	mustGavel(t, db, "split", "main", "--exclude-status", "draft")
	return db
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// piJSON is a summary's pi with its interval as [lo, hi], and every figure
// in the one shape; figureJSON is that shape.
type piJSON struct {
	ScottPi *float64              `json:"scott_pi"`
	CI      []float64             `json:"ci"`
	Figures map[string]figureJSON `json:"figures"`
}

type figureJSON struct {
	Value *float64
	CI    *struct{ Lo, Hi float64 }
}

type calibrateJSON struct {
	Judges []struct {
		Judge string `json:"judge"`
		Test  struct {
			Original struct {
				ScottPi *float64 `json:"scott_pi"`
			} `json:"original"`
			Calibrated struct {
				ScottPi *float64 `json:"scott_pi"`
			} `json:"calibrated"`
		} `json:"test"`
		Gain struct {
			ScottPi *float64  `json:"scott_pi"`
			CI      []float64 `json:"ci"`
		} `json:"gain"`
		Iterations      int    `json:"iterations"`
		SelectedVersion string `json:"selected_version"`
	} `json:"judges"`
}

// TestCalibrateResumesAfterKill kills a calibration with SIGKILL in the
// middle, starts it again, and checks that it reaches the same result as
// an uninterrupted run and resends nothing that had been answered.
func TestCalibrateResumesAfterKill(t *testing.T) {
	dir := t.TempDir()
	args := func(url string) []string {
		return []string{"calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge",
			"--base-url", url + "/v1", "--max-iter", "2", "--concurrency", "1", "--resamples", "200", "--json"}
	}
	// The uninterrupted run.
	ref := llmtest.NewOpenAI()
	defer ref.Close()
	ref.Answer = simAnswer(t)
	dbRef := simStore(t, filepath.Join(dir, "ref"), 240)
	var want calibrateJSON
	decodeJSON(t, mustGavel(t, dbRef, args(ref.URL)...), &want)
	total := ref.Count()
	if total < 100 || len(want.Judges) != 1 {
		t.Fatalf("reference run: %d calls, %+v", total, want)
	}

	// The killed run: the server kills the client when the request at 60%
	// arrives, before answering it.
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	var mu sync.Mutex
	answered := map[[32]byte]bool{}
	var proc *os.Process
	killAt := total * 6 / 10
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if proc != nil && c.N == killAt {
			proc.Kill() // SIGKILL
			return llmtest.Reset
		}
		return llmtest.None
	}
	answer := simAnswer(t)
	resent := 0
	srv.Answer = func(c *llmtest.Call) string {
		mu.Lock()
		h := sha256.Sum256(c.Body)
		if answered[h] {
			resent++
		}
		answered[h] = true
		mu.Unlock()
		return answer(c)
	}
	dbKill := simStore(t, filepath.Join(dir, "kill"), 240)
	cmd := exec.Command(gavelBin, append([]string{"--db", dbKill}, args(srv.URL)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	mu.Lock()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc = cmd.Process
	mu.Unlock()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("the first run was not killed: %v\n%s", err, stderr.String())
	}
	mu.Lock()
	proc = nil
	before := len(answered)
	mu.Unlock()
	if before != killAt-1 {
		t.Fatalf("%d requests answered before the kill, want %d", before, killAt-1)
	}
	// Started again, it finishes with the same result and resends nothing
	// that had been answered.
	var got calibrateJSON
	decodeJSON(t, mustGavel(t, dbKill, args(srv.URL)...), &got)
	if resent != 0 {
		t.Fatalf("%d answered requests were sent again", resent)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("resumed run differs:\n%s\n%s", b, a)
	}
	if srv.Count() != total+1 {
		t.Fatalf("the two runs sent %d requests, want the uninterrupted %d plus the one cut off", srv.Count(), total)
	}
}

// offlineRounds runs an offline command until it finishes, answering its
// pending requests through batch files as the simulated world between
// rounds, decodes its JSON into out and returns the rounds it took.
func offlineRounds(t *testing.T, db, dir string, args []string, out any) int {
	t.Helper()
	for rounds := 0; rounds < 30; rounds++ {
		r := gavel(t, db, args...)
		if r.code == 0 {
			decodeJSON(t, r.stdout, out)
			return rounds
		}
		if r.code != 3 || !strings.Contains(r.stderr, "pending") {
			t.Fatalf("round %d: exit %d: %s", rounds, r.code, r.stderr)
		}
		answerPending(t, db, dir, simAnswer(t))
	}
	t.Fatalf("not finished after 30 rounds")
	return 0
}

// TestCalibrateOfflineThroughBatchFiles runs a calibration offline: each
// run stops at a stage boundary with pending requests (exit 3), which go
// out as an OpenAI batch file, are answered, imported, and the next run
// continues, until it finishes.
func TestCalibrateOfflineThroughBatchFiles(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 180)
	args := []string{"calibrate", "--judge", "rubric5", "--split", "main", "--model", "openai:judge", "--offline",
		"--max-iter", "2", "--resamples", "200", "--json"}
	var out calibrateJSON
	rounds := offlineRounds(t, db, dir, args, &out)
	if rounds < 3 || len(out.Judges) != 1 || out.Judges[0].SelectedVersion == "" || out.Judges[0].Gain.ScottPi == nil {
		t.Fatalf("after %d rounds: %+v", rounds, out)
	}
	t.Logf("offline calibration finished after %d batch rounds: test pi %.3f -> %.3f", rounds,
		*out.Judges[0].Test.Original.ScottPi, *out.Judges[0].Test.Calibrated.ScottPi)
	// Finished, a rerun makes no call and needs no batch.
	if r := gavel(t, db, args...); r.code != 0 {
		t.Fatalf("rerun: %+v", r)
	}
}

// A teacher panel, the label-blind check and repeated runs go through
// --offline and batch files like every other stage, and calibrate --json
// carries teachers (model, kept, abstained, corrected), label_blind and
// repeats (seed, selected_version, gain {scott_pi, ci}).
func TestCalibratePanelAndRepeatsOffline(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 180)
	args := []string{"calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge", "--offline",
		"--teacher-model", "openai:teacher-a,openai:teacher-b", "--teacher-quorum", "all", "--label-blind",
		"--repeats", "2", "--max-iter", "1", "--resamples", "200", "--json"}
	var out struct {
		Teachers []map[string]any `json:"teachers"`
		Blind    []map[string]any `json:"label_blind"`
		Repeats  []map[string]any `json:"repeats"`
		Summary  map[string]any   `json:"repeats_summary"`
	}
	rounds := offlineRounds(t, db, dir, args, &out)
	if len(out.Teachers) != 2 || len(out.Blind) != 2 || len(out.Repeats) != 2 || out.Summary == nil {
		t.Fatalf("after %d rounds: %+v", rounds, out)
	}
	for _, tch := range out.Teachers {
		for _, k := range []string{"model", "kept", "abstained", "corrected"} {
			if _, ok := tch[k]; !ok {
				t.Fatalf("teacher lacks %s: %v", k, tch)
			}
		}
	}
	for i, r := range out.Repeats {
		gain, _ := r["gain"].(map[string]any)
		if r["seed"] != float64(i+1) || r["selected_version"] == "" || gain == nil {
			t.Fatalf("repeat %d: %v", i, r)
		}
		if _, ok := gain["scott_pi"]; !ok {
			t.Fatalf("repeat %d gain: %v", i, gain)
		}
		if _, ok := gain["ci"]; !ok {
			t.Fatalf("repeat %d gain: %v", i, gain)
		}
	}
	t.Logf("panel, blind check and 2 repeats finished offline after %d batch rounds", rounds)
}

// Transfer: the version a calibration selected, evaluated with another
// model (a simulated judge with other biases) beside the original prompt,
// with the paired gain and its interval; on the calibration's own model
// the same evaluation gives the calibration's own test gain.
func TestEvalVersionTransfer(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 400)
	var cal calibrateJSON
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "2",
		"--resamples", "300", "--seed", "3", "--json"), &cal)
	sel := cal.Judges[0].SelectedVersion
	type transferJSON struct {
		Transfer struct {
			Version, Original, Model string
			CalibratedWith           []string `json:"calibrated_with"`
			Gain                     figureJSON
			Difference               map[string]figureJSON
		}
	}
	var same, other transferJSON
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--version", sel[:10],
		"--resamples", "300", "--seed", "3", "--json"), &same)
	if same.Transfer.Version != sel || same.Transfer.Gain.Value == nil || cal.Judges[0].Gain.ScottPi == nil ||
		*same.Transfer.Gain.Value != *cal.Judges[0].Gain.ScottPi {
		t.Fatalf("on its own model: %+v, calibration's gain %v", same.Transfer, cal.Judges[0].Gain.ScottPi)
	}
	report := filepath.Join(dir, "transfer.html")
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "main:test", "--model", "sim:naive-scale=0.3", "--version", sel,
		"--resamples", "300", "--json", "--report", report), &other)
	tr := other.Transfer
	if tr.Model != "sim:naive-scale=0.3" || len(tr.CalibratedWith) != 1 || tr.CalibratedWith[0] != "sim" || tr.Original == "" || tr.Original == sel ||
		tr.Gain.Value == nil || tr.Gain.CI == nil || tr.Difference["scott_pi"].Value == nil || *tr.Difference["scott_pi"].Value != *tr.Gain.Value {
		t.Fatalf("transfer %+v", tr)
	}
	t.Logf("gain on the calibration's model %.3f; on a model with other biases %.3f [%.3f, %.3f]", *same.Transfer.Gain.Value,
		*tr.Gain.Value, tr.Gain.CI.Lo, tr.Gain.CI.Hi)
	page, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(page), "this is its transfer to another model") {
		t.Fatalf("report: %v", err)
	}
	if r := gavel(t, db, "eval", "--judge", "rubric5", "--split", "main:test", "--model", "sim", "--version", sel); r.code != 2 ||
		!strings.Contains(r.stderr, "is a version of passfail") {
		t.Fatalf("wrong judge: %+v", r)
	}
}

func TestDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	res := gavel(t, filepath.Join(t.TempDir(), "unused.db"), "demo", "--out", out)
	if res.code != 0 {
		t.Fatalf("demo: %+v", res)
	}
	if !strings.Contains(res.stdout, "[simulated]") || !strings.Contains(res.stdout, filepath.Join(out, "report.html")) {
		t.Fatalf("demo output: %s", res.stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		World  string `json:"world"`
		Judges []struct {
			Judge string `json:"judge"`
			Test  struct {
				Original *struct {
					ScottPi *float64  `json:"scott_pi"`
					CI      []float64 `json:"ci"`
				} `json:"original"`
				ThresholdTuned *struct {
					ScottPi *float64 `json:"scott_pi"`
				} `json:"threshold_tuned"`
				Calibrated *struct {
					ScottPi *float64 `json:"scott_pi"`
				} `json:"calibrated"`
			} `json:"test"`
			Gain struct {
				ScottPi *float64  `json:"scott_pi"`
				CI      []float64 `json:"ci"`
			} `json:"gain"`
			Iterations       int    `json:"iterations"`
			SelectedVersion  string `json:"selected_version"`
			RevisionsOverCap int    `json:"revisions_over_cap"`
		} `json:"judges"`
		Controls []struct {
			Name, Judge string
			Original    piJSON `json:"original"`
			Calibrated  piJSON `json:"calibrated"`
			Gain        piJSON `json:"gain"`
			Selected    int    `json:"selected_iteration"`
		} `json:"controls"`
		Teacher struct{ Kept, Abstained, Corrected int } `json:"teacher"`
		Noise   struct {
			Flip, Before, After float64
		} `json:"noise"`
		ModelCalls   struct{ Live, Cached int } `json:"model_calls"`
		TeacherPanel struct {
			Quorum     string
			KeptAlone  int `json:"kept_by_sycophant_alone"`
			KeptPanel  int `json:"kept_by_panel"`
			Teachers   []struct{ Model string }
			LabelBlind []struct {
				Model               string
				RationalisationRate figureJSON `json:"rationalisation_rate"`
			} `json:"label_blind"`
		} `json:"teacher_panel"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	// The teacher panel: the teacher that keeps every label keeps more
	// than the majority panel it sits in; label-blind, it rationalises
	// every contrary label and the sound teachers none.
	tp := s.TeacherPanel
	if tp.Quorum != "majority" || len(tp.Teachers) != 3 || len(tp.LabelBlind) != 3 || tp.KeptPanel >= tp.KeptAlone {
		t.Fatalf("teacher panel: %+v", tp)
	}
	// The sycophant keeps every contrary label; the sound teachers, which
	// use the outcome to point to causes they would not have failed a
	// change for unprompted, keep fewer.
	for i := range 3 {
		v := tp.LabelBlind[i].RationalisationRate.Value
		if v == nil || tp.LabelBlind[i].RationalisationRate.CI == nil || (i == 2) != (*v == 1) {
			t.Fatalf("label-blind %s: %+v", tp.LabelBlind[i].Model, tp.LabelBlind[i].RationalisationRate)
		}
	}
	if s.World != "sim" || len(s.Judges) != 2 || s.Teacher.Kept == 0 || s.Noise.Flip != 0.25 || s.Noise.After >= s.Noise.Before || s.ModelCalls.Live == 0 {
		t.Fatalf("summary %s", b)
	}
	for _, j := range s.Judges {
		if j.Test.Original == nil || len(j.Test.Original.CI) != 2 || j.Test.Calibrated == nil || j.Gain.ScottPi == nil || len(j.Gain.CI) != 2 || j.Iterations == 0 || j.SelectedVersion == "" {
			t.Fatalf("judge %s: %s", j.Judge, b)
		}
		if (j.Judge == "rubric5") != (j.Test.ThresholdTuned != nil) {
			t.Fatalf("threshold_tuned must be set for rubric5 only: %s", b)
		}
	}
	// Every figure is also in gavel's one shape, {"value", "ci": {"lo", "hi"}}.
	var raw struct {
		Judges []struct{ Gain piJSON }
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []figureJSON{raw.Judges[0].Gain.Figures["scott_pi"], s.Controls[0].Original.Figures["scott_pi"], s.Controls[0].Original.Figures["fail_recall"]} {
		if f.Value == nil || f.CI == nil || f.CI.Lo > *f.Value || f.CI.Hi < *f.Value {
			t.Fatalf("a figure not in the one shape: %s", b)
		}
	}
	// The length cap binds at least once, and the refusals are counted.
	if s.Judges[0].RevisionsOverCap+s.Judges[1].RevisionsOverCap == 0 {
		t.Errorf("no revision was refused for the length cap: %s", b)
	}
	// The controls, in one world: only their figures are checked here.
	// What holds over worlds (the honest gain above 0, and above random
	// rules) is claimed from gavel sim study (TestSimStudyOverWorlds,
	// TestREADMEStudyTable), never from one seed.
	supported := 0
	names := map[string]bool{}
	for _, c := range s.Controls {
		if c.Gain.ScottPi == nil || len(c.Gain.CI) != 2 || c.Original.ScottPi == nil || c.Calibrated.ScottPi == nil {
			t.Fatalf("control %s %s without figures: %s", c.Name, c.Judge, b)
		}
		names[c.Name] = true
		if c.Name == "honest" && c.Gain.CI[0] > 0 {
			supported++
		}
	}
	if len(s.Controls) != 6 || len(names) != 3 {
		t.Fatalf("controls: want honest, unreliable_teacher and random_rules for both judges: %s", b)
	}
	if supported == 0 {
		t.Errorf("the honest calibration's gain interval includes 0 for every judge")
	}
	for _, f := range []string{"report.html", "summary.md"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !strings.Contains(string(b), "imulated") {
			t.Fatalf("%s missing or not labelled simulated: %v", f, err)
		}
	}
	page, _ := os.ReadFile(filepath.Join(out, "report.html"))
	for _, want := range []string{"pi by iteration", "Teacher decisions by recorded status", "Label noise study", "Information ablation", "<pre>", "Controls", "by control, 95% intervals", "refused for length",
		"Teacher panel (quorum majority)", "Label-blind check",
		"<h2>Summary</h2>", "<details>", `text-anchor="end">threshold `} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestBenchBuildAndRun(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	out := filepath.Join(dir, "bench.jsonl")
	var build struct {
		Programs int            `json:"programs"`
		PerScore map[string]int `json:"per_score"`
	}
	decodeJSON(t, mustGavel(t, db, "bench", "build", "--problems", "../../examples/humaneval/HumanEval.jsonl.gz", "--lang", "python",
		"--limit", "5", "--per-score", "1", "--seed", "2", "--program-timeout", "5s", "--model", "sim", "-o", out, "--json"), &build)
	if build.Programs == 0 || len(build.PerScore) != 6 {
		t.Fatalf("build %+v", build)
	}
	// With the simulated model applying model rules too, no perturbed
	// program is its reference apart from comments and white space.
	progs, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(progs)), "\n") {
		var p struct {
			Score           int
			Lang            string
			Code, Reference string
			Rules           []string
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if p.Score < 5 && perturb.SameCode(p.Lang, p.Code, p.Reference) {
			t.Errorf("program %d (score %d, rules %v) is its reference apart from comments and white space", i, p.Score, p.Rules)
		}
	}
	for _, n := range build.PerScore {
		if n != build.Programs/6 {
			t.Fatalf("unbalanced %+v", build.PerScore)
		}
	}
	var run struct {
		Evaluations []struct {
			Name    string `json:"name"`
			N       int    `json:"n"`
			Invalid int    `json:"invalid"`
			Figures map[string]struct {
				Value *float64 `json:"value"`
			} `json:"figures"`
		} `json:"evaluations"`
		Simulated bool `json:"simulated"`
	}
	report := filepath.Join(dir, "bench.html")
	decodeJSON(t, mustGavel(t, db, "bench", "run", "--bench", out, "--judge", "passfail", "--model", "sim", "--json", "--report", report, "--resamples", "200"), &run)
	if len(run.Evaluations) != 4 || !run.Simulated {
		t.Fatalf("run %+v", run)
	}
	// Every program is scored; only the judge may give an unreadable
	// answer (the simulated model sometimes does, as real ones do).
	for _, e := range run.Evaluations {
		if e.N+e.Invalid != build.Programs || (e.Invalid > 0 && !strings.Contains(e.Name, "passfail")) {
			t.Fatalf("%s judged %d of %d (%d invalid)", e.Name, e.N, build.Programs, e.Invalid)
		}
	}
	if e := run.Evaluations[0]; e.Name != "token_similarity" || e.Figures["spearman"].Value == nil {
		t.Fatalf("token similarity: %+v", e)
	}
	page, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "Simulated.") {
		t.Fatalf("report: %v", err)
	}
}
