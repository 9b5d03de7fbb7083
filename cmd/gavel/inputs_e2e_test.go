package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
)

// inputStore is a store of six records, two of them with a candidate of
// 50,000 characters, split into one test part.
func inputStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	var b strings.Builder
	for i := range 6 {
		cand := fmt.Sprintf("patch %d", i)
		if i < 2 {
			cand = strings.Repeat(fmt.Sprintf("+ line %d of a long patch\n", i), 2000)
		}
		fmt.Fprintf(&b, `{"id":"r%d","task":"task %d","candidate":%q,"outcome":{"status":"passed"}}`+"\n", i, i, cand)
	}
	in := filepath.Join(dir, "records.jsonl")
	os.WriteFile(in, []byte(b.String()), 0o644)
	mustGavel(t, db, "ingest", in)
	mustGavel(t, db, "split", "all", "--train", "0", "--val", "0", "--test", "1", "--allow-small")
	return db
}

func gavelWithKey(t *testing.T, db string, args ...string) result {
	t.Helper()
	cmd := exec.Command(gavelBin, append([]string{"--db", db}, args...)...)
	cmd.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=k")
	return runCmd(t, cmd)
}

// A provider refusing inputs over its context window: those records get
// invalid verdicts with reason input_too_long, each asked once, the run
// goes on (exit 0) and says how many; --max-input-chars cuts them to fit
// and counts the cut records; --no-cache sends every request again.
func TestInputsThatDoNotFit(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if len(c.LastUser) > 20_000 {
			return llmtest.ContextTooLong
		}
		return llmtest.None
	}
	srv.Answer = func(*llmtest.Call) string { return `{"reasoning":"fine","verdict":"pass"}` }
	db := inputStore(t)
	judge := []string{"judge", "--judge", "passfail", "--split", "all:test", "--model", "openai:m", "--base-url", srv.URL + "/v1", "--concurrency", "1"}
	r := gavelWithKey(t, db, append(judge, "--json")...)
	var out struct {
		Pass         int `json:"pass"`
		Invalid      int `json:"invalid"`
		InputTooLong int `json:"input_too_long"`
		InputsCut    int `json:"inputs_cut"`
	}
	decodeJSON(t, r.stdout, &out)
	if r.code != 0 || out.Pass != 4 || out.Invalid != 2 || out.InputTooLong != 2 || srv.Count() != 6 {
		t.Fatalf("exit %d, %+v after %d calls; stderr %s", r.code, out, srv.Count(), r.stderr)
	}
	if !strings.Contains(r.stderr, "2 record(s) were longer than the model's context window") || strings.Contains(r.stderr, "rerun") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	run := lastRun(t, db, "judge")
	var recs runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--disagree", "--json"), &recs)
	for _, rec := range recs.Records {
		if rec.Verdict != "invalid" {
			t.Fatalf("a disagreement that is not the refused input: %+v", rec)
		}
	}

	// Cut to 5,000 characters: everything fits, two records cut.
	n := srv.Count()
	r = gavelWithKey(t, db, append(judge, "--max-input-chars", "5000", "--json")...)
	decodeJSON(t, r.stdout, &out)
	if r.code != 0 || out.Pass != 6 || out.InputTooLong != 0 || out.InputsCut != 2 || srv.Count() != n+2 {
		t.Fatalf("with --max-input-chars: exit %d, %+v, %d new calls; %s", r.code, out, srv.Count()-n, r.stderr)
	}
	var cutSeen bool
	for _, c := range srv.Calls()[n:] {
		cutSeen = cutSeen || strings.Contains(c.LastUser, "[... cut: ")
	}
	if !cutSeen {
		t.Fatal("the model never saw the cut marker")
	}

	// --no-cache: all six again.
	n = srv.Count()
	if r := gavelWithKey(t, db, append(judge, "--max-input-chars", "5000", "--no-cache")...); r.code != 0 || srv.Count() != n+6 {
		t.Fatalf("--no-cache sent %d of 6 (exit %d): %s", srv.Count()-n, r.code, r.stderr)
	}
	n = srv.Count()
	if r := gavelWithKey(t, db, "eval", "--judge", "passfail", "--split", "all:test", "--model", "openai:m", "--base-url", srv.URL+"/v1",
		"--max-input-chars", "5000", "--no-cache", "--resamples", "20"); r.code != 0 || srv.Count() != n+6 {
		t.Fatalf("eval --no-cache sent %d of 6 (exit %d): %s", srv.Count()-n, r.code, r.stderr)
	}
}

// A model that answers nothing readable stops the command (exit 1) with
// its name and its first answer, rather than reporting invalid verdicts
// or an information gap.
func TestAnUnreadableModelStops(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(*llmtest.Call) string { return "I would rather not say." }
	db := inputStore(t)
	for _, args := range [][]string{
		{"judge", "--judge", "passfail", "--split", "all:test"},
		{"teach", "--judge", "passfail", "--split", "all:test"},
	} {
		r := gavelWithKey(t, db, append(args, "--model", "openai:garbage", "--base-url", srv.URL+"/v1")...)
		if r.code != 1 || !strings.Contains(r.stderr, "of openai:garbage cannot be read") || !strings.Contains(r.stderr, `"I would rather not say."`) {
			t.Fatalf("%s: exit %d\n%s", args[0], r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "information gap") {
			t.Fatalf("%s: an unreadable model reported as an information gap:\n%s", args[0], r.stderr)
		}
	}
}

// A split of 22 records (the issue's) would leave test with fewer than
// 10: split refuses it, naming the part and --allow-small, and stores
// nothing; with --allow-small it is made and warns of the small parts.
func TestSplitRefusesSmallParts(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	var b strings.Builder
	for i := range 22 {
		status := "passed"
		if i%2 == 0 {
			status = "failed"
		}
		fmt.Fprintf(&b, `{"id":"r%02d","task":"t","candidate":"c","outcome":{"status":%q}}`+"\n", i, status)
	}
	in := filepath.Join(dir, "records.jsonl")
	os.WriteFile(in, []byte(b.String()), 0o644)
	mustGavel(t, db, "ingest", in)
	r := gavel(t, db, "split", "main")
	if r.code != 1 || !strings.Contains(r.stderr, "fewer than 10") || !strings.Contains(r.stderr, "--allow-small") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if out := mustGavel(t, db, "split", "list"); strings.Contains(out, "main") {
		t.Fatalf("a refused split was stored: %s", out)
	}
	// One label only in a part of 10 or more is refused too.
	b.Reset()
	for i := range 30 {
		fmt.Fprintf(&b, `{"id":"p%02d","task":"t","candidate":"c","outcome":{"status":"passed"}}`+"\n", i)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	db2 := filepath.Join(dir, "passes.db")
	mustGavel(t, db2, "ingest", in)
	if r := gavel(t, db2, "split", "main", "--train", "0", "--val", "0", "--test", "1"); r.code != 1 || !strings.Contains(r.stderr, "no record of one label") {
		t.Fatalf("one label: exit %d, stderr %s", r.code, r.stderr)
	}
	r = gavel(t, db, "split", "main", "--allow-small")
	if r.code != 0 || !strings.Contains(r.stderr, "figures on it will have wide intervals") {
		t.Fatalf("--allow-small: exit %d, stderr %s", r.code, r.stderr)
	}
}

// An editor behind a real provider's protocol that answers the applier
// with a one-line prompt: calibrate refuses that revision twice, keeps the
// previous prompt, selects no version made that way, and says so in its
// JSON (revisions_refused by cause, the selection and why) and its text.
func TestOneLinePromptIsRefused(t *testing.T) {
	db := simStore(t, t.TempDir(), 200)
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(c *llmtest.Call) string {
		if c.SchemaName == "edit_proposals" {
			return `{"analysis":"a","proposals":[{"kind":"fail_reason","text":"Fail a change that drops an error check.","target":""},` +
				`{"kind":"pass_reason","text":"Extra logging is not a reason to fail.","target":""}]}`
		}
		return `{"system": "x"}`
	}
	calibrate := func(extra ...string) result {
		cmd := exec.Command(gavelBin, append([]string{"--db", db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim",
			"--editor-model", "openai:editor", "--max-iter", "2", "--resamples", "200"}, extra...)...)
		cmd.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1")
		return runCmd(t, cmd)
	}
	r := calibrate("--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var out struct {
		Selection        struct{ Rule, Why string }
		RevisionsRefused []struct {
			Cause string
			Count int
		} `json:"revisions_refused"`
		Versions []struct {
			Iteration int
			ValGain   struct {
				Value *float64
				CI    *struct{ Lo, Hi, Level float64 }
			} `json:"val_gain"`
		}
		Judges []struct {
			StopReason      string `json:"stop_reason"`
			SelectedVersion string `json:"selected_version"`
		}
	}
	decodeJSON(t, r.stdout, &out)
	if len(out.RevisionsRefused) != 1 || out.RevisionsRefused[0].Cause != "answer_format" || out.RevisionsRefused[0].Count != 2 {
		t.Fatalf("revisions_refused %+v", out.RevisionsRefused)
	}
	if len(out.Versions) != 1 || !strings.Contains(out.Judges[0].StopReason, "previous prompt was kept") || out.Selection.Rule != "lower-bound" {
		t.Fatalf("versions %d, stop %q, selection %+v", len(out.Versions), out.Judges[0].StopReason, out.Selection)
	}
	if v := out.Versions[0].ValGain; v.Value == nil || *v.Value != 0 || v.CI == nil || v.CI.Level != 0.8 {
		t.Fatalf("the original's val_gain is 0 against itself at the selection's level: %+v", v)
	}
	if n := len(srv.Calls()); n == 0 {
		t.Fatal("the editor's server was never asked")
	}
	text := calibrate()
	if !strings.Contains(text.stdout, "revisions refused: answer_format 2") || !strings.Contains(text.stdout, "selected by lower-bound") {
		t.Fatalf("text output:\n%s", text.stdout)
	}
}
