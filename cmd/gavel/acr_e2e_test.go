package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/sim"
)

const humanEvalFile = "../../examples/humaneval/HumanEval.jsonl.gz"

type acrJSON struct {
	Round     int    `json:"round"`
	Output    string `json:"output"`
	Lineage   string `json:"lineage"`
	Simulated bool   `json:"simulated"`
	Stats     struct {
		Instructions   int            `json:"instructions"`
		SingleTurn     int            `json:"single_turn"`
		Critique       int            `json:"critique"`
		Skipped        int            `json:"skipped"`
		WinRate        *float64       `json:"win_rate"`
		DecidedBy      map[string]int `json:"decided_by"`
		Samples        int            `json:"samples"`
		Executed       int            `json:"executed"`
		ExecStatus     map[string]int `json:"exec_status"`
		SamplePassRate *float64       `json:"sample_pass_rate"`
		BestPassRate   *float64       `json:"best_pass_rate"`
	} `json:"stats"`
	Calls llm.RunStats `json:"calls"`
}

func readLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestACRRoundOnHumanEval runs one round on 20 HumanEval Python problems
// with the simulated model in every role, checks both record formats, that
// the statistics add up against the files, and that a rerun makes no model
// call and writes the same files.
func TestACRRoundOnHumanEval(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	out := filepath.Join(dir, "round1.jsonl")
	args := []string{"acr", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "20",
		"--generator", "sim", "--judge-model", "sim", "--critic-model", "sim", "--n", "7",
		"-o", out, "--report", filepath.Join(dir, "round1.html"), "--next-instructions", filepath.Join(dir, "next.jsonl"), "--json"}
	var sum acrJSON
	decodeJSON(t, mustGavel(t, db, args...), &sum)
	st := sum.Stats
	if !sum.Simulated || sum.Round != 1 || st.Instructions != 20 || st.Samples != 140 || sum.Calls.Sent == 0 {
		t.Fatalf("summary: %+v", sum)
	}
	// The dataset: one record per instruction not skipped, in both forms.
	recs := readLines(t, out)
	if len(recs) != st.SingleTurn+st.Critique {
		t.Fatalf("%d records, want %d single-turn + %d critique", len(recs), st.SingleTurn, st.Critique)
	}
	single, two := 0, 0
	for i, line := range recs {
		var rec struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
				Weight  *int   `json:"weight"`
			} `json:"messages"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		var roles []string
		for _, m := range rec.Messages {
			roles = append(roles, m.Role)
			if strings.TrimSpace(m.Content) == "" {
				t.Fatalf("record %d: an empty %s turn", i, m.Role)
			}
		}
		switch strings.Join(roles, ",") {
		case "system,user,assistant":
			single++
			if !strings.HasPrefix(rec.Messages[2].Content, sim.Label) {
				t.Fatalf("record %d: a single-turn record's answer must be the sample", i)
			}
		case "system,user,assistant,user,assistant":
			two++
			m := rec.Messages
			if *m[2].Weight != 0 || *m[4].Weight != 1 || !strings.Contains(m[3].Content, sim.Label) ||
				!strings.HasPrefix(m[2].Content, sim.Label) || strings.Contains(m[4].Content, sim.Label) || !strings.HasPrefix(m[4].Content, "```python\n") {
				t.Fatalf("record %d: two-turn record %+v", i, m)
			}
		default:
			t.Fatalf("record %d: roles %v", i, roles)
		}
	}
	if single != st.SingleTurn || two != st.Critique || single == 0 || two == 0 {
		t.Fatalf("%d single-turn and %d two-turn records; summary says %d and %d (both forms must appear)", single, two, st.SingleTurn, st.Critique)
	}
	// The statistics add up, recounted from the lineage.
	lines := readLines(t, sum.Lineage)
	if len(lines) != 20 {
		t.Fatalf("%d lineage lines, want 20", len(lines))
	}
	passed, executed, decided, won := 0, 0, 0, 0
	for _, line := range lines {
		var l acr.Lineage
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Round != 1 || len(l.Samples) != 7 || l.Models.Generator != "sim" || l.Prompts.Pointwise == "" || !l.Simulated {
			t.Fatalf("lineage %+v", l)
		}
		decided++
		if l.Winner == acr.Sample {
			won++
			if l.Branch != "single_turn" {
				t.Fatalf("%s: the sample won but the branch is %s", l.ID, l.Branch)
			}
		}
		for _, s := range l.Samples {
			executed++
			if s.Exec.Status == "passed" {
				passed++
			}
		}
	}
	total := 0
	for _, n := range st.ExecStatus {
		total += n
	}
	by := 0
	for _, n := range st.DecidedBy {
		by += n
	}
	if st.SingleTurn+st.Critique+st.Skipped != 20 || total != 140 || st.Executed != executed || by != decided ||
		*st.SamplePassRate != float64(passed)/float64(executed) || *st.WinRate != float64(won)/float64(decided) ||
		st.ExecStatus["passed"] != passed {
		t.Fatalf("statistics do not add up: %+v (recounted: %d passed of %d, %d won of %d)", st, passed, executed, won, decided)
	}
	t.Logf("[simulated] round: %d single-turn, %d critique; win rate %.2f; sample pass rate %.2f", single, two, *st.WinRate, *st.SamplePassRate)
	page, err := os.ReadFile(filepath.Join(dir, "round1.html"))
	if err != nil || !strings.Contains(string(page), "Simulated.") || strings.Count(string(page), "<svg") < 3 {
		t.Fatalf("report: %v", err)
	}
	// A rerun makes zero live calls and writes the same files.
	data1, _ := os.ReadFile(out)
	lin1, _ := os.ReadFile(sum.Lineage)
	var again acrJSON
	decodeJSON(t, mustGavel(t, db, args...), &again)
	if again.Calls.Sent != 0 || again.Calls.Requests == 0 || again.Calls.CacheHits != again.Calls.Requests {
		t.Fatalf("rerun calls: %+v", again.Calls)
	}
	data2, _ := os.ReadFile(out)
	lin2, _ := os.ReadFile(sum.Lineage)
	if string(data1) != string(data2) || string(lin1) != string(lin2) {
		t.Fatal("a rerun wrote different files")
	}
	// The next round's instructions carry the winners as references, and a
	// second round runs on them; the report reads both rounds' lineage.
	nf, _ := os.Open(filepath.Join(dir, "next.jsonl"))
	next, err := acr.ReadInstructions(nf, "next.jsonl")
	nf.Close()
	if err != nil || len(next) != 20 {
		t.Fatalf("next instructions: %v (%d)", err, len(next))
	}
	moved := 0
	for _, in := range next {
		if strings.HasPrefix(in.Reference, sim.Label) {
			moved++
		}
	}
	if moved != st.SingleTurn {
		t.Fatalf("%d references replaced by samples; %d samples won", moved, st.SingleTurn)
	}
	out2 := filepath.Join(dir, "round2.jsonl")
	mustGavel(t, db, "acr", "--instructions", filepath.Join(dir, "next.jsonl"), "--limit", "5", "--n", "2", "--round", "2", "--model", "sim", "-o", out2)
	r := mustGavel(t, db, "acr", "report", "--lineage", sum.Lineage, "--lineage", strings.TrimSuffix(out2, ".jsonl")+".lineage.jsonl",
		"-o", filepath.Join(dir, "rounds.html"))
	if !strings.Contains(r, "round 1: 20 instructions") || !strings.Contains(r, "round 2: 5 instructions") {
		t.Fatalf("acr report: %s", r)
	}
	if page, _ := os.ReadFile(filepath.Join(dir, "rounds.html")); !strings.Contains(string(page), "Win rate and pass rates by round") {
		t.Fatal("the report of two rounds has no chart by round")
	}

	// The judge check, on the same samples and runs (all from the caches).
	type checkJSON struct {
		Check struct {
			Pairs         int      `json:"pairs"`
			Agree         int      `json:"agree"`
			Disagree      int      `json:"disagree"`
			SelfPreferred int      `json:"self_preferred"`
			Flags         []string `json:"flags"`
			Agreement     struct {
				Value *float64
				CI    *struct{ Lo, Hi float64 }
			} `json:"agreement"`
			SelfPreference    figureJSON `json:"self_preference"`
			AgreementExecutor figureJSON `json:"agreement_executor_decided"`
			AgreementJudge    figureJSON `json:"agreement_judge_decided"`
			ReferenceBias     figureJSON `json:"reference_bias"`
			SamplePairs       int        `json:"sample_pairs"`
			Tied              int        `json:"tied_pairs"`
		} `json:"check"`
		Simulated bool         `json:"simulated"`
		Calls     llm.RunStats `json:"calls"`
	}
	check := func(judgeModel string, extra ...string) checkJSON {
		var c checkJSON
		a := append([]string{"acr", "check", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "20",
			"--model", "sim", "--judge-model", judgeModel, "--n", "7", "--resamples", "500", "--json"}, extra...)
		decodeJSON(t, mustGavel(t, db, a...), &c)
		return c
	}
	honest := check("sim")
	h := honest.Check
	if !honest.Simulated || h.Pairs == 0 || h.Agree+h.Disagree != h.Pairs || h.Agreement.Value == nil || h.Agreement.CI == nil ||
		h.Agreement.CI.Lo > *h.Agreement.Value || h.Agreement.CI.Hi < *h.Agreement.Value {
		t.Fatalf("check of the simulated judge: %+v", h)
	}
	// The figures issue 28 names, each {value, ci}; pairs between samples
	// as well as against the reference.
	for name, f := range map[string]figureJSON{"executor": h.AgreementExecutor, "judge": h.AgreementJudge, "bias": h.ReferenceBias, "self": h.SelfPreference} {
		if f.Value == nil || f.CI == nil || f.CI.Lo > *f.Value || f.CI.Hi < *f.Value {
			t.Errorf("check figure %s: %+v", name, f)
		}
	}
	if h.SamplePairs == 0 || h.Tied == 0 {
		t.Errorf("no pairs between samples (%d) or tied pairs (%d)", h.SamplePairs, h.Tied)
	}
	for _, f := range h.Flags {
		if strings.Contains(f, "self-preference") {
			t.Fatalf("the honest simulated judge flagged for self-preference: %q", h.Flags)
		}
	}
	biased := check("sim:self-preferring")
	b := biased.Check
	if b.Pairs != h.Pairs || b.SelfPreference.Value == nil || *b.SelfPreference.Value <= 0.55 || *b.Agreement.Value >= *h.Agreement.Value ||
		b.ReferenceBias.Value == nil || *b.ReferenceBias.Value >= *h.ReferenceBias.Value {
		t.Fatalf("check of the self-preferring judge: %+v (honest: %+v)", b, h)
	}
	flagged := strings.Join(b.Flags, "\n")
	if !strings.Contains(flagged, "self-preference") || !strings.Contains(flagged, "agreement with the tests") {
		t.Fatalf("the biased judge is not flagged: %q", b.Flags)
	}
	t.Logf("[simulated] judge check over %d pairs: agreement %.2f (honest) vs %.2f (self-preferring); self-preference %.2f",
		h.Pairs, *h.Agreement.Value, *b.Agreement.Value, *b.SelfPreference.Value)
	// Thresholds are configurable: the honest judge, flagged at the
	// default 85% agreement, is not under loose ones.
	if !strings.Contains(strings.Join(h.Flags, "\n"), "agreement with the tests") {
		t.Fatalf("the honest simulated judge agrees with the tests %.2f, yet is not flagged at 85%%: %q", *h.Agreement.Value, h.Flags)
	}
	// As a CI gate, a flag fails the command.
	gateArgs := []string{"acr", "check", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "20",
		"--model", "sim", "--n", "7", "--resamples", "500", "--fail-on-flags"}
	if r := gavel(t, db, gateArgs...); r.code != 1 || !strings.Contains(r.stderr, "gate failed") || !strings.Contains(r.stdout, "FLAG") {
		t.Fatalf("--fail-on-flags on a flagged judge: %+v", r)
	}
	if r := gavel(t, db, append(gateArgs, "--min-agreement", "0.01", "--max-self-preference", "0.99")...); r.code != 0 {
		t.Fatalf("--fail-on-flags with nothing flagged: %+v", r)
	}
	loose := check("sim", "--min-agreement", "0.01", "--max-self-preference", "0.99")
	if len(loose.Check.Flags) != 0 {
		t.Fatalf("flags with loose thresholds: %q", loose.Check.Flags)
	}
}

// knownInstructions writes the first n HumanEval problems as instructions
// with `gavel acr instructions`, reads them back, and returns the file.
func knownInstructions(t *testing.T, db, dir string, n int) string {
	t.Helper()
	ins := filepath.Join(dir, "instructions.jsonl")
	mustGavel(t, db, "acr", "instructions", "--from", humanEvalFile, "--format", "humaneval", "--limit", fmt.Sprint(n), "-o", ins)
	fh, err := os.Open(ins)
	if err != nil {
		t.Fatal(err)
	}
	list, err := acr.ReadInstructions(fh, ins)
	fh.Close()
	if err != nil || len(list) != n || list[0].Tests == "" || list[0].Language != "python" {
		t.Fatalf("instructions: %v %+v", err, list)
	}
	return ins
}

// TestACROfflineThroughBatchFiles runs a round offline with an OpenAI
// model: each run stops at a stage boundary (exit 3), the pending requests
// go out as a batch file answered by the simulated world behind a fake
// batch runner, and the next run continues until the round is written.
func TestACROfflineThroughBatchFiles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	ins := knownInstructions(t, db, dir, 4)
	answer := simAnswerWith(t, sim.Model{})
	out := filepath.Join(dir, "round.jsonl")
	args := []string{"acr", "--instructions", ins, "--model", "openai:gen", "--n", "3", "--offline", "-o", out, "--json"}
	rounds := 0
	var sum acrJSON
	for ; rounds < 10; rounds++ {
		r := gavel(t, db, args...)
		if r.code == 0 {
			decodeJSON(t, r.stdout, &sum)
			break
		}
		if r.code != 3 || !strings.Contains(r.stderr, "pending") {
			t.Fatalf("run %d: exit %d: %s", rounds, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("run %d: the dataset was written before the round finished", rounds)
		}
		answerPending(t, db, dir, answer)
	}
	// generate, score, compare, and critique when a reference won.
	if rounds < 3 || sum.Stats.Instructions != 4 || sum.Stats.Samples != 12 || sum.Calls.Sent != 0 {
		t.Fatalf("after %d batch rounds: %+v", rounds, sum)
	}
	if n := len(readLines(t, out)); n != sum.Stats.SingleTurn+sum.Stats.Critique {
		t.Fatalf("%d records", n)
	}
	t.Logf("offline round finished after %d batch rounds", rounds)
}

// TestACRRolesOnTheirOwnServers runs a round live with each role on its
// own fake server, through the real provider code: the generator on one
// OpenAI-compatible server (with rate limiting to retry through), the
// judges on another, the critic on an Anthropic server. Each server sees
// only its role's requests, and a rerun sends nothing.
func TestACRRolesOnTheirOwnServers(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	ins := knownInstructions(t, db, dir, 4)
	gen, judges, critic := llmtest.NewOpenAI(), llmtest.NewOpenAI(), llmtest.NewAnthropic()
	defer gen.Close()
	defer judges.Close()
	defer critic.Close()
	gen.Answer = simAnswerWith(t, sim.Model{})
	gen.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if c.N%4 == 1 {
			return llmtest.RateLimited
		}
		return llmtest.None
	}
	gen.RetryAfter = "0"
	judges.Answer = simAnswerWith(t, sim.Model{})
	critic.Answer = func(c *llmtest.Call) string {
		return `{"critique":"The loop misses the last pair of elements. Please write a corrected answer."}`
	}
	args := []string{"acr", "--instructions", ins, "--n", "2",
		"--generator", "openai:student", "--generator-base-url", gen.URL + "/v1",
		"--judge-model", "openai:judge", "--judge-base-url", judges.URL + "/v1",
		"--critic-model", "anthropic:critic", "--critic-base-url", critic.URL,
		"--ties", "reference", "-o", filepath.Join(dir, "round.jsonl"), "--json"}
	cmd := func() acrJSON {
		c := exec.Command(gavelBin, append([]string{"--db", db}, args...)...)
		c.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=test-key", "ANTHROPIC_API_KEY=test-key")
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("acr: %v\n%s", err, errb.String())
		}
		var sum acrJSON
		decodeJSON(t, out.String(), &sum)
		return sum
	}
	sum := cmd()
	for _, c := range gen.Calls() {
		if c.HasSchema || c.Model != "student" {
			t.Fatalf("the generator's server got a %s request for %s", c.SchemaName, c.Model)
		}
	}
	for _, c := range judges.Calls() {
		if c.SchemaName != "scores" && c.SchemaName != "preference" {
			t.Fatalf("the judges' server got a %q request", c.SchemaName)
		}
	}
	for _, c := range critic.Calls() {
		if c.Model != "critic" {
			t.Fatalf("the critic's server got a request for %s", c.Model)
		}
	}
	if sum.Calls.Retries == 0 || sum.Stats.Samples != 8 || len(critic.Calls()) != sum.Stats.Critique || sum.Stats.Critique == 0 {
		t.Fatalf("summary %+v; critic calls %d", sum, len(critic.Calls()))
	}
	g, j, c := gen.Count(), judges.Count(), critic.Count()
	if again := cmd(); again.Calls.Sent != 0 || gen.Count() != g || judges.Count() != j || critic.Count() != c {
		t.Fatalf("rerun sent %d: generator %d -> %d, judges %d -> %d, critic %d -> %d", again.Calls.Sent, g, gen.Count(), j, judges.Count(), c, critic.Count())
	}
	// Two base URLs for one model are refused: the cache could not tell
	// their answers apart.
	r := gavel(t, db, "acr", "--instructions", ins, "--generator", "openai:m", "--judge-model", "openai:m", "--critic-model", "openai:m",
		"--generator-base-url", "http://127.0.0.1:1/v1", "--judge-base-url", "http://127.0.0.1:2/v1", "-o", filepath.Join(dir, "x.jsonl"))
	if r.code != 2 || !strings.Contains(r.stderr, "two base URLs") {
		t.Fatalf("one model, two servers: %+v", r)
	}
}

// TestACRResumesAfterAKill kills a live round while the generator's server
// is answering, reruns it, and checks that the answered requests are not
// sent again and that the dataset is the one an uninterrupted round writes.
func TestACRResumesAfterAKill(t *testing.T) {
	dir := t.TempDir()
	ins := knownInstructions(t, filepath.Join(dir, "x.db"), dir, 3)
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = simAnswerWith(t, sim.Model{})
	srv.Latency = 100 * time.Millisecond
	run := func(db, out string) *exec.Cmd {
		c := exec.Command(gavelBin, "--db", db, "acr", "--instructions", ins, "--model", "openai:m", "--base-url", srv.URL+"/v1",
			"--n", "4", "--concurrency", "2", "-o", out)
		c.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=k")
		return c
	}
	db, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "a.jsonl")
	c := run(db, out)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600 && srv.Count() < 6; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	c.Process.Kill()
	c.Wait()
	before := srv.Count()
	if before < 6 || before >= 12 {
		t.Fatalf("killed after %d calls: want it killed while generating (12 samples)", before)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a killed round left a dataset")
	}
	if b, err := run(db, out).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, b)
	}
	resumed := srv.Count()
	// A fresh store: the whole round once, uninterrupted.
	if b, err := run(filepath.Join(dir, "b.db"), filepath.Join(dir, "b.jsonl")).CombinedOutput(); err != nil {
		t.Fatalf("fresh: %v\n%s", err, b)
	}
	whole := srv.Count() - resumed
	// The killed run's answered requests are not sent again: at most the
	// two in flight at the kill are.
	if resumed > whole+2 {
		t.Fatalf("killed + resumed sent %d requests, an uninterrupted round %d", resumed, whole)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("the resumed round wrote a different dataset")
	}
	t.Logf("killed after %d calls; killed + resumed %d calls; uninterrupted %d", before, resumed, whole)
}
