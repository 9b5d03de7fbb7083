package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/sim"
)

type evalJSON struct {
	Judge     string `json:"judge"`
	N         int    `json:"n"`
	Invalid   int    `json:"invalid"`
	Simulated bool   `json:"simulated"`
	ScottPi   struct {
		Value *float64 `json:"value"`
		CI    *struct {
			Lo, Hi float64
			Groups int
		} `json:"ci"`
	} `json:"scott_pi"`
	Thresholds []struct {
		Threshold float64 `json:"threshold"`
	} `json:"thresholds"`
	Tuned *struct {
		Threshold int `json:"threshold"`
	} `json:"tuned"`
	Compare *struct {
		Difference map[string]struct {
			Value *float64
		} `json:"difference"`
	} `json:"compare"`
	Calls struct {
		Requests  int `json:"requests"`
		CacheHits int `json:"cache_hits"`
		Sent      int `json:"sent"`
	} `json:"calls"`
}

// namingJudge writes a copy of a built-in judge whose system prompt names
// every simulated signal, those fatal in world 5 (the records' world) as
// reasons to fail and the benign ones as harmless (or the other way round).
func namingJudge(t *testing.T, dir, builtin string, backwards bool) string {
	world := sim.NewWorld(5)
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "judge", "builtin", builtin+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	lines.WriteString("\n  What this team has learnt about its agents' changes:\n")
	for _, s := range sim.Signals {
		fatal := (world.Effect(s) == sim.Fatal) != backwards
		if fatal {
			fmt.Fprintf(&lines, "  - Fail a change that %s.\n", s.Phrase)
		} else {
			fmt.Fprintf(&lines, "  - A change that %s is harmless: not a reason to fail.\n", s.Phrase)
		}
	}
	text := strings.Replace(string(b), "\nuser: |", lines.String()+"user: |", 1)
	name := "named"
	if backwards {
		name = "backwards"
	}
	text = strings.Replace(text, "name: "+builtin, "name: "+builtin+"_"+name, 1)
	path := filepath.Join(dir, builtin+"_"+name+".yaml")
	os.WriteFile(path, []byte(text), 0o644)
	return path
}

func TestSimulatedWorldEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	world := filepath.Join(dir, "world.jsonl")
	mustGavel(t, db, "sim", "records", "--n", "1500", "--seed", "5", "-o", world)
	mustGavel(t, db, "ingest", world)
	mustGavel(t, db, "split", "main", "--exclude-status", "draft", "--seed", "2")

	eval := func(judgeArg string, extra ...string) evalJSON {
		var e evalJSON
		args := append([]string{"eval", "--judge", judgeArg, "--split", "main:test", "--model", "sim", "--json", "--resamples", "500"}, extra...)
		decodeJSON(t, mustGavel(t, db, args...), &e)
		return e
	}
	for _, builtin := range []string{"passfail", "rubric5"} {
		base := eval(builtin)
		good := eval(namingJudge(t, dir, builtin, false))
		bad := eval(namingJudge(t, dir, builtin, true))
		t.Logf("%s: built-in pi %.3f, named %.3f, backwards %.3f (n %d, invalid %d)",
			builtin, *base.ScottPi.Value, *good.ScottPi.Value, *bad.ScottPi.Value, base.N, base.Invalid)
		if !base.Simulated || base.N < 300 || base.ScottPi.CI == nil || base.ScottPi.CI.Groups < 50 {
			t.Fatalf("%s: %+v", builtin, base)
		}
		// As the judge package checks over three worlds (its figures
		// vary with the world).
		if v := *base.ScottPi.Value; v < 0.02 || v > 0.5 {
			t.Errorf("%s built-in pi %.3f outside 0.02..0.5", builtin, v)
		}
		if v := *good.ScottPi.Value; v < 0.6 || v < *base.ScottPi.Value+0.3 {
			t.Errorf("%s with the signals named: pi %.3f, want at least 0.6 and 0.3 above the built-in", builtin, v)
		}
		if *bad.ScottPi.Value >= *base.ScottPi.Value {
			t.Errorf("%s named backwards: pi %.3f not below the built-in %.3f", builtin, *bad.ScottPi.Value, *base.ScottPi.Value)
		}
		// A rerun makes no live model call.
		again := eval(builtin)
		if again.Calls.Sent != 0 || again.Calls.CacheHits != again.Calls.Requests || *again.ScottPi.Value != *base.ScottPi.Value {
			t.Errorf("%s rerun: %+v", builtin, again.Calls)
		}
	}
	// Rubric extras: every threshold, one tuned on train, a comparison and
	// the report.
	reportFile := filepath.Join(dir, "report.html")
	e := eval("rubric5", "--tune-threshold-on", "main:train", "--compare", "passfail", "--report", reportFile)
	if len(e.Thresholds) < 3 || e.Tuned == nil || e.Tuned.Threshold < 1 || e.Compare == nil || e.Compare.Difference["scott_pi"].Value == nil {
		t.Fatalf("rubric extras: %+v", e)
	}
	page, err := os.ReadFile(reportFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Confusion matrix", "Metrics by pass threshold", "Simulated.", "rubric5 minus passfail"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Prompt versions, their diff, and drift by month between two of them.
	var ps []struct {
		Hash  string `json:"hash"`
		Judge string `json:"judge"`
	}
	decodeJSON(t, mustGavel(t, db, "prompts", "list", "--json"), &ps)
	versions := map[string]string{}
	for _, p := range ps {
		versions[p.Judge] = p.Hash
	}
	a, b := versions["passfail"], versions["passfail_named"]
	if a == "" || b == "" {
		t.Fatalf("prompt versions %+v", ps)
	}
	if d := mustGavel(t, db, "prompts", "diff", a[:10], b[:10]); !strings.Contains(d, "+- Fail a change that drops an error check") {
		t.Fatalf("prompts diff:\n%s", d)
	}
	var drift struct {
		Windows []struct {
			N       int                        `json:"n"`
			ScottPi map[string]json.RawMessage `json:"scott_pi"`
		} `json:"windows"`
	}
	decodeJSON(t, mustGavel(t, db, "drift", "--judge-versions", a[:10]+","+b[:10], "--by", "month", "--split", "main:test", "--model", "sim", "--json", "--resamples", "200"), &drift)
	if len(drift.Windows) != 6 {
		t.Fatalf("%d monthly windows, want 6", len(drift.Windows))
	}
	for _, w := range drift.Windows {
		if w.N == 0 || len(w.ScottPi) != 2 {
			t.Fatalf("window %+v", w)
		}
	}

	// judge stores verdicts and counts them.
	var js struct{ Records, Pass, Fail, Invalid int }
	decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:val", "--model", "sim", "--json"), &js)
	if js.Records == 0 || js.Pass+js.Fail+js.Invalid != js.Records {
		t.Fatalf("judge summary %+v", js)
	}
}

// TestEvalAgainstOpenAICompatibleServer runs eval through the real
// provider path against the fake server, some of whose answers can never
// be read.
func TestEvalAgainstOpenAICompatibleServer(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(c *llmtest.Call) string {
		first := c.Users[0]
		switch {
		case strings.Contains(first, "WANT=garbage"):
			return "I would rather not say."
		case strings.Contains(first, "WANT=fail"):
			return `{"reasoning":"the change breaks the build","verdict":"fail"}`
		}
		return `{"reasoning":"the change does the task","verdict":"pass"}`
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	var b strings.Builder
	// 12 records: labels alternate; the judge answers fail for records 0-3,
	// garbage for 4 and 5, pass for the rest.
	for i := range 12 {
		want := "pass"
		switch {
		case i < 4:
			want = "fail"
		case i < 6:
			want = "garbage"
		}
		status := "passed"
		if i%2 == 0 {
			status = "failed"
		}
		fmt.Fprintf(&b, `{"id":"r%02d","task":"task %d","candidate":"patch WANT=%s","group":"g%d","outcome":{"status":%q}}`+"\n", i, i, want, i, status)
	}
	in := filepath.Join(dir, "records.jsonl")
	os.WriteFile(in, []byte(b.String()), 0o644)
	mustGavel(t, db, "ingest", in)
	mustGavel(t, db, "split", "all", "--train", "0", "--val", "0", "--test", "1", "--allow-small")
	var e evalJSON
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "all:test", "--model", "openai:judge-model",
		"--base-url", srv.URL+"/v1", "--json", "--resamples", "200"), &e)
	if e.N != 12 || e.Invalid != 2 || e.Simulated {
		t.Fatalf("eval %+v", e)
	}
	// Valid: r00-r03 judged fail (labels fail,pass,fail,pass), r06-r11 judged
	// pass (labels fail,pass,...): TP 2, FP 2, FN 3, TN 3; Po 0.5.
	// Pooled fail share (4 + 5) / 20 = 0.45: Pe = 0.45^2 + 0.55^2 = 0.505.
	want := (0.5 - 0.505) / (1 - 0.505)
	if d := *e.ScottPi.Value - want; d > 1e-9 || d < -1e-9 {
		t.Fatalf("pi %v, want %v", *e.ScottPi.Value, want)
	}
	// Every garbage answer was asked for again once, with the problem shown.
	repairs := 0
	for _, c := range srv.Calls() {
		if c.HasAssistant {
			repairs++
		}
	}
	if repairs != 2 {
		t.Fatalf("%d repair calls, want 2", repairs)
	}
	n := srv.Count()
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "all:test", "--model", "openai:judge-model",
		"--base-url", srv.URL+"/v1", "--json", "--resamples", "200"), &e)
	if srv.Count() != n || e.Invalid != 2 {
		t.Fatalf("rerun sent %d calls; invalid %d", srv.Count()-n, e.Invalid)
	}
}

// The simulated model never passes for a model on real data: without
// --model a judging command is a usage error that names it; sim on
// records the simulated world did not make is refused unless asked for,
// and then every output says simulated (issue 13, item 7).
func TestSimNeverPassesForARealModel(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gavel.db")
	mustGavel(t, db, "ingest", codejudge, "--map", codejudgeMap, "--source", "tests")
	mustGavel(t, db, "split", "cj", "--train", "0.4", "--val", "0.3", "--test", "0.3", "--seed", "1")
	r := gavel(t, db, "eval", "--judge", "passfail", "--split", "cj:test")
	if r.code != 2 || !strings.Contains(r.stderr, "--model") {
		t.Fatalf("eval without --model: %+v", r)
	}
	r = gavel(t, db, "eval", "--judge", "passfail", "--split", "cj:test", "--model", "sim")
	if r.code != 2 || !strings.Contains(r.stderr, "not made by the simulated world") || !strings.Contains(r.stderr, "--sim-on-real") {
		t.Fatalf("sim on real records: %+v", r)
	}
	r = gavel(t, db, "calibrate", "--judge", "passfail", "--split", "cj", "--model", "openai:m", "--teacher-model", "sim")
	if r.code != 2 || !strings.Contains(r.stderr, "not made by the simulated world") {
		t.Fatalf("a simulated teacher on real records: %+v", r)
	}
	var out struct {
		Simulated bool `json:"simulated"`
	}
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "cj:test", "--model", "sim", "--sim-on-real", "--json", "--resamples", "100"), &out)
	if !out.Simulated {
		t.Fatal("sim on real records, allowed, must be marked simulated")
	}
}

// --limit takes a sample of about N records, both labels and whole
// groups, for a quick first try.
func TestLimit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	world := filepath.Join(dir, "world.jsonl")
	mustGavel(t, db, "sim", "records", "--n", "120", "--seed", "2", "-o", world)
	mustGavel(t, db, "ingest", world)
	mustGavel(t, db, "split", "main", "--train", "0.4", "--val", "0.3", "--test", "0.3", "--seed", "1")
	var js struct{ Records, Pass, Fail, Invalid int }
	decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--limit", "12", "--json"), &js)
	if js.Records < 12 || js.Records > 20 {
		t.Fatalf("judged %d records with --limit 12", js.Records)
	}
	run := lastRun(t, db, "judge")
	var recs runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--json"), &recs)
	labels := map[string]int{}
	for _, r := range recs.Records {
		labels[r.Outcome]++
	}
	if labels["pass"] == 0 || labels["fail"] == 0 {
		t.Fatalf("the sample holds one label only: %v", labels)
	}
	// eval as a CI gate: under the bar, exit 1 with the summary written
	// as usual (one JSON object); over it, exit 0.
	args := []string{"eval", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--resamples", "100", "--json"}
	r := gavel(t, db, append(args, "--fail-under-pi", "0.99")...)
	var ev struct {
		ScottPi   struct{ Value *float64 }  `json:"scott_pi"`
		N         int                       `json:"n"`
		Invalid   int                       `json:"invalid"`
		Confusion [2][2]int                 `json:"confusion"`
		ByLabel   map[string]map[string]int `json:"confusion_by_label"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || r.code != 1 || ev.ScottPi.Value == nil || !strings.Contains(r.stderr, "gate failed") {
		t.Fatalf("gate under the bar: %v %+v", err, r)
	}
	// The labelled confusion matrix is the matrix, rows the outcome.
	if ev.ByLabel["fail"]["pass"] != ev.Confusion[0][1] || ev.ByLabel["pass"]["fail"] != ev.Confusion[1][0] ||
		ev.ByLabel["fail"]["fail"]+ev.ByLabel["fail"]["pass"]+ev.ByLabel["pass"]["fail"]+ev.ByLabel["pass"]["pass"]+ev.Invalid != ev.N {
		t.Fatalf("confusion %v, by label %v, n %d, invalid %d", ev.Confusion, ev.ByLabel, ev.N, ev.Invalid)
	}
	if r := gavel(t, db, append(args, "--fail-under-pi", "-1")...); r.code != 0 {
		t.Fatalf("gate over the bar: %+v", r)
	}
}

// First use: mistakes get messages that say what to type instead, and a
// report that cannot be written fails before any work (issue 13, item 13).
func TestFirstUseMessages(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	world := filepath.Join(dir, "world.jsonl")
	mustGavel(t, db, "sim", "records", "--n", "60", "--seed", "2", "-o", world)
	mustGavel(t, db, "ingest", world)
	mustGavel(t, db, "split", "main", "--train", "0.4", "--val", "0.3", "--test", "0.3", "--seed", "1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ask", "--model", "gpt-4o", "hi"}, "did you mean openai:gpt-4o?"},
		{[]string{"ask", "--model", "o3-mini", "hi"}, "did you mean openai:o3-mini?"},
		{[]string{"ask", "--model", "claude-sonnet-4-5", "hi"}, "did you mean anthropic:claude-sonnet-4-5?"},
		{[]string{"ask", "--model", "meta-llama/Llama-3.1-8B", "hi"}, "is openai:meta-llama/Llama-3.1-8B"},
		{[]string{"calibrate", "--model", "sim", "--teacher-model", "sim,gpt-4o", "--split", "main"}, "--teacher-model: model \"gpt-4o\" names no provider"},
		{[]string{"eval", "--judg", "passfail"}, "did you mean --judge?"},
		{[]string{"eval", "--judge", "rubric5", "--split", "main:test", "--model", "sim", "--threshold", "6"}, "rubric5 has 5 checks"},
		{[]string{"judge", "--judge", "passfail", "--split", "main", "--model", "sim"}, "say which part to judge, e.g. main:test"},
		{[]string{"bench", "build", "--problems", "../../examples/humaneval-x-go/humaneval_go.jsonl.gz", "--lang", "python", "-o", filepath.Join(dir, "b.jsonl")}, "give --lang go"},
		{[]string{"judge", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--inputs", "task,candidate,context.nothing"}, `has a context entry "nothing"`},
		{[]string{"eval", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--report", filepath.Join(dir, "no", "such", "r.html")}, "cannot be written"},
	} {
		r := gavel(t, db, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.HasSuffix(r.stderr, "\n") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
