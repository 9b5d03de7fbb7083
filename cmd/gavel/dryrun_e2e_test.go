package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type dryRunJSON struct {
	DryRun bool `json:"dry_run"`
	Lines  []struct {
		Role    string                      `json:"role"`
		Stage   string                      `json:"stage"`
		Calls   int                         `json:"calls"`
		Cached  int                         `json:"cached"`
		Repeats int                         `json:"repeats"`
		ToSend  int                         `json:"to_send"`
		Exact   bool                        `json:"exact"`
		Cost    struct{ Low, High float64 } `json:"cost_usd"`
	} `json:"lines"`
	Total struct {
		Calls, Cached, Repeats int
		ToSend                 int `json:"to_send"`
		Exact                  bool
	} `json:"total"`
}

type callsJSON struct {
	Calls struct {
		Requests int `json:"requests"`
		Sent     int `json:"sent"`
	} `json:"calls"`
}

// --dry-run sends nothing and counts what a run will send: exactly for a
// judge's records; for a calibration, exactly for its first stage and at
// most the documented bound in all. After the run, the cache answers
// every exact call.
func TestDryRun(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 240)
	var plan dryRunJSON
	decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--dry-run", "--json"), &plan)
	// Records with the same inputs make one request, counted once.
	n, unique := plan.Total.Calls, plan.Total.Calls-plan.Total.Repeats
	if !plan.DryRun || !plan.Total.Exact || n == 0 || plan.Total.Cached != 0 || plan.Total.ToSend != unique {
		t.Fatalf("judge plan: %+v", plan)
	}
	if r := gavel(t, db, "cache", "stats", "--json"); !strings.Contains(r.stdout, `"entries": 0`) {
		t.Fatalf("a dry run wrote to the cache: %s", r.stdout)
	}
	var run callsJSON
	decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--json"), &run)
	if run.Calls.Requests != n {
		t.Fatalf("the dry run counted %d calls, the run made %d", n, run.Calls.Requests)
	}
	decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--dry-run", "--json"), &plan)
	if plan.Total.Cached != unique || plan.Total.ToSend != 0 {
		t.Fatalf("after the run: %+v", plan.Total)
	}

	// Calibration: the first stage exactly, the rest within the bound.
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "3", "--dry-run", "--json"), &plan)
	exact, testCached := 0, 0
	for _, l := range plan.Lines {
		if l.Exact {
			exact += l.Calls
		}
		if l.Stage == "original prompt on test" {
			testCached = l.Cached
		}
	}
	if plan.Total.Exact || exact == 0 || testCached != unique {
		t.Fatalf("calibration plan: %+v", plan)
	}
	var cal struct {
		Calls struct {
			Requests int `json:"requests"`
			Sent     int `json:"sent"`
		} `json:"calls"`
	}
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "3", "--resamples", "200", "--json"), &cal)
	sent := cal.Calls.Sent
	if sent < exact-n-plan.Total.Repeats || sent > plan.Total.ToSend {
		t.Fatalf("the calibration sent %d requests; the dry run said %d for certain (%d of them cached) and at most %d",
			sent, exact, n, plan.Total.ToSend)
	}
	t.Logf("calibration: %d exact, at most %d to send; the run sent %d", exact, plan.Total.ToSend, sent)
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "3", "--dry-run", "--json"), &plan)
	for _, l := range plan.Lines {
		if l.Exact && l.ToSend != 0 {
			t.Fatalf("after the run, %s still has %d to send", l.Stage, l.ToSend)
		}
	}
	// Commands without a dry run say so.
	if r := gavel(t, db, "ask", "--model", "sim", "--dry-run", "hello"); r.code != 2 || !strings.Contains(r.stderr, "--dry-run is not available") {
		t.Fatalf("ask --dry-run: %+v", r)
	}
}

// An ACR round's dry run: the generator's calls exactly, the judges' and
// the critic's within their bounds; after the round, every generator and
// scoring call is answered by the cache and the scores become exact.
func TestACRDryRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	args := []string{"acr", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "6", "--model", "sim", "--n", "3",
		"-o", filepath.Join(dir, "round.jsonl"), "--json"}
	var plan dryRunJSON
	decodeJSON(t, mustGavel(t, db, append(args, "--dry-run")...), &plan)
	lines := map[string]int{}
	for _, l := range plan.Lines {
		lines[l.Stage] = l.Calls
		if (l.Stage == "generate") != l.Exact || l.Cached != 0 {
			t.Fatalf("line %+v", l)
		}
	}
	// 6 instructions x 3 samples; two pairwise orders and one critique per
	// instruction at most.
	if lines["generate"] != 18 || lines["score"] != 18 || lines["compare"] != 12 || lines["critique"] != 6 || plan.Total.Exact {
		t.Fatalf("plan %+v", plan)
	}
	if r := gavel(t, db, "cache", "stats", "--json"); !strings.Contains(r.stdout, `"entries": 0`) {
		t.Fatalf("a dry run wrote to the cache: %s", r.stdout)
	}
	var run acrJSON
	decodeJSON(t, mustGavel(t, db, args...), &run)
	if run.Calls.Requests > plan.Total.Calls || run.Calls.Requests < lines["generate"] {
		t.Fatalf("the round made %d requests; the plan said %d for certain and at most %d", run.Calls.Requests, lines["generate"], plan.Total.Calls)
	}
	decodeJSON(t, mustGavel(t, db, append(args, "--dry-run")...), &plan)
	for _, l := range plan.Lines {
		switch l.Stage {
		case "generate", "score":
			if !l.Exact || l.Cached+l.Repeats != l.Calls || l.ToSend != 0 {
				t.Fatalf("after the round, %+v", l)
			}
		}
	}
}

// A benchmark built again from the same store runs no candidate twice and
// writes the same file (the results are kept by content key).
func TestBenchBuildReusesResults(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	type sum struct {
		Programs   int `json:"programs"`
		Candidates int `json:"candidates"`
		Cached     int `json:"cached_runs"`
	}
	var first, second sum
	args := func(out string) []string {
		return []string{"bench", "build", "--problems", "../../examples/humaneval/HumanEval.jsonl.gz", "--lang", "python",
			"--limit", "3", "--seed", "2", "--program-timeout", "10s", "-o", out, "--json"}
	}
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	decodeJSON(t, mustGavel(t, db, args(a)...), &first)
	decodeJSON(t, mustGavel(t, db, args(b)...), &second)
	if first.Cached != 0 || first.Candidates == 0 || second.Cached != second.Candidates || second.Candidates != first.Candidates {
		t.Fatalf("first %+v, second %+v", first, second)
	}
	fa, _ := os.ReadFile(a)
	fb, _ := os.ReadFile(b)
	if string(fa) != string(fb) || first.Programs == 0 {
		t.Fatalf("the rebuilt benchmark differs (%d programs)", first.Programs)
	}
}

// bench build --dry-run runs nothing and sends nothing: without --model it
// plans no call; with one, at most two model-applied rules per try, eight
// tries per candidate, five scores per problem, which a real build stays
// within.
func TestBenchBuildDryRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	args := []string{"bench", "build", "--problems", "../../examples/humaneval/HumanEval.jsonl.gz", "--lang", "python",
		"--limit", "2", "--candidates", "1", "--seed", "2", "-o", filepath.Join(dir, "b.jsonl"), "--json"}
	var plan dryRunJSON
	decodeJSON(t, mustGavel(t, db, append(args, "--dry-run")...), &plan)
	if !plan.DryRun || len(plan.Lines) != 0 || plan.Total.Calls != 0 {
		t.Fatalf("without a model: %+v", plan)
	}
	decodeJSON(t, mustGavel(t, db, append(args, "--dry-run", "--model", "sim")...), &plan)
	if len(plan.Lines) != 1 || plan.Lines[0].Calls != 2*5*8*1*2 || plan.Lines[0].Exact {
		t.Fatalf("with a model: %+v", plan)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.jsonl")); err == nil {
		t.Fatal("a dry run wrote the benchmark")
	}
	mustGavel(t, db, append(args, "--model", "sim")...)
	var stats struct {
		Entries int `json:"entries"`
	}
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &stats)
	if stats.Entries == 0 || stats.Entries > plan.Lines[0].Calls {
		t.Fatalf("the build made %d distinct model calls; the dry run's bound is %d", stats.Entries, plan.Lines[0].Calls)
	}
}
