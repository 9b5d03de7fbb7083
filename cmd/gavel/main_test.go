package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gavelBin is the binary built once for the end-to-end tests.
var gavelBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gavel-e2e-")
	if err != nil {
		panic(err)
	}
	// Installed as 'go install ./cmd/...' installs it: gavel and its
	// small sandbox launcher side by side.
	gavelBin = filepath.Join(dir, "gavel")
	build := exec.Command("go", "build", "-o", dir, ".", "../gavel-sandbox")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build gavel: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// gavel runs the binary with a store in dir.
func gavel(t *testing.T, db string, args ...string) result {
	t.Helper()
	cmd := exec.Command(gavelBin, append([]string{"--db", db}, args...)...)
	cmd.Env = append(os.Environ(), "GAVEL_DB=")
	return runCmd(t, cmd)
}

// runCmd runs a command and returns what it printed and its exit code;
// a command that could not be started fails the test.
func runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func mustGavel(t *testing.T, db string, args ...string) string {
	t.Helper()
	r := gavel(t, db, args...)
	if r.code != 0 {
		t.Fatalf("gavel %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}

const codejudge = "../../examples/codejudge/python_completions.jsonl"
const codejudgeMap = "task=prompt,candidate=generation,label=passed,group=task_id,id=task_id+completion_id"

type stats struct {
	Total    int            `json:"total"`
	ByLabel  map[string]int `json:"by_label"`
	ByStatus map[string]int `json:"by_status"`
	BySource map[string]int `json:"by_source"`
	Groups   int            `json:"groups"`
}

func TestEndToEndCodeJudge(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	out := mustGavel(t, db, "ingest", codejudge, "--map", codejudgeMap, "--source", "tests", "--json")
	var ing struct {
		Inserted, Unchanged, Lines int
		Skipped                    []any
	}
	decodeJSON(t, out, &ing)
	if ing.Inserted != 492 || ing.Lines != 492 || len(ing.Skipped) != 0 {
		t.Fatalf("ingest summary %+v", ing)
	}

	var s stats
	decodeJSON(t, mustGavel(t, db, "records", "stats", "--json"), &s)
	if s.Total != 492 || s.ByLabel["pass"] != 206 || s.ByLabel["fail"] != 286 || s.Groups != 164 ||
		s.ByStatus["passed"] != 206 || s.ByStatus["failed"] != 286 || s.BySource["tests"] != 492 {
		t.Fatalf("stats %+v", s)
	}

	// Importing the same file again changes nothing.
	decodeJSON(t, mustGavel(t, db, "ingest", codejudge, "--map", codejudgeMap, "--source", "tests", "--json"), &ing)
	if ing.Inserted != 0 || ing.Unchanged != 492 {
		t.Fatalf("re-ingest summary %+v", ing)
	}

	// A split: parts add up, and each task's completions stay together.
	mustGavel(t, db, "split", "main", "--train", "0.4", "--val", "0.3", "--test", "0.3", "--seed", "1")
	var show struct {
		Total int
		Parts map[string]struct{ Records, Pass, Fail, Groups int }
	}
	decodeJSON(t, mustGavel(t, db, "split", "show", "main", "--json"), &show)
	sumRecords, sumGroups, sumPass := 0, 0, 0
	for _, p := range show.Parts {
		sumRecords += p.Records
		sumGroups += p.Groups
		sumPass += p.Pass
	}
	if show.Total != 492 || sumRecords != 492 || sumGroups != 164 || sumPass != 206 {
		t.Fatalf("split show %+v", show)
	}
	// The train part holds about 40% of the records and of the passes
	// (exact shares per stratum are checked in package record).
	if tr := show.Parts["train"]; tr.Records < 190 || tr.Records > 204 || tr.Pass < 72 || tr.Pass > 93 {
		t.Fatalf("train part %+v", tr)
	}
	groupOf := map[string]string{}
	for _, part := range []string{"train", "val", "test"} {
		var list []struct{ ID, Group string }
		decodeJSON(t, mustGavel(t, db, "records", "list", "--split", "main:"+part, "--json"), &list)
		if len(list) != show.Parts[part].Records {
			t.Fatalf("list of %s has %d records, show says %d", part, len(list), show.Parts[part].Records)
		}
		for _, r := range list {
			if p, ok := groupOf[r.Group]; ok && p != part {
				t.Fatalf("group %s in %s and %s", r.Group, p, part)
			}
			groupOf[r.Group] = part
		}
	}
	// Same seed, same split; the name is taken.
	if r := gavel(t, db, "split", "main"); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("second split main: %+v", r)
	}
	mustGavel(t, db, "split", "again", "--seed", "1")
	a := mustGavel(t, db, "records", "list", "--split", "main:test", "--json")
	b := mustGavel(t, db, "records", "list", "--split", "again:test", "--json")
	if a != b {
		t.Fatal("the same seed gave a different test part")
	}

	// Export round-trips exactly through a new store.
	exp1 := filepath.Join(dir, "export1.jsonl")
	mustGavel(t, db, "records", "export", "-o", exp1)
	db2 := filepath.Join(dir, "second.db")
	mustGavel(t, db2, "ingest", exp1)
	exp2 := filepath.Join(dir, "export2.jsonl")
	mustGavel(t, db2, "records", "export", "-o", exp2)
	b1, _ := os.ReadFile(exp1)
	b2, _ := os.ReadFile(exp2)
	if len(b1) == 0 || !bytes.Equal(b1, b2) {
		t.Fatalf("export did not round-trip (%d vs %d bytes)", len(b1), len(b2))
	}
	if n := bytes.Count(b1, []byte("\n")); n != 492 {
		t.Fatalf("export has %d lines", n)
	}
	// Re-importing the export into the first store is a no-op.
	decodeJSON(t, mustGavel(t, db, "ingest", exp1, "--json"), &ing)
	if ing.Inserted != 0 || ing.Unchanged != 492 {
		t.Fatalf("export re-import %+v", ing)
	}
}

func TestIngestMalformedLineKeepsStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(
		`{"id":"a","task":"t","candidate":"c","outcome":{"status":"landed"}}`+"\n"+
			`{"id":"b","task":"t","candidate":"c","outcome":{"status":"draft"}}`+"\n"), 0o644)
	mustGavel(t, db, "ingest", good)
	before := mustGavel(t, db, "records", "export", "-o", "-")

	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(
		`{"id":"c","task":"t","candidate":"c","outcome":{"status":"passed"}}`+"\n"+
			`{"id":"d","task":"t","candidate":"c","outcome":{"status":"failed"}}`+"\n"+
			`{"id":"e","task":"t","candidate":"c","outcome":{"status":`+"\n"+
			`{"id":"f","task":"t","candidate":"c","outcome":{"status":"failed"}}`+"\n"), 0o644)
	r := gavel(t, db, "ingest", bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":3:") || !strings.Contains(r.stderr, "nothing was imported") {
		t.Fatalf("ingest of a bad file: exit %d, stderr %q", r.code, r.stderr)
	}
	if after := mustGavel(t, db, "records", "export", "-o", "-"); after != before {
		t.Fatalf("the store changed:\n%s\nwas\n%s", after, before)
	}

	// A missing field is named with its line.
	missing := filepath.Join(dir, "missing.jsonl")
	os.WriteFile(missing, []byte(`{"id":"g","candidate":"c","outcome":{"status":"passed"}}`+"\n"), 0o644)
	if r := gavel(t, db, "ingest", missing); r.code != 1 || !strings.Contains(r.stderr, missing+":1: field task: missing") {
		t.Fatalf("missing task: %+v", r)
	}

	// --skip-invalid imports the rest and lists the skipped line.
	r = gavel(t, db, "ingest", bad, "--skip-invalid", "--json")
	var sum struct {
		Inserted int
		Skipped  []struct {
			File string
			Line int
		}
	}
	decodeJSON(t, r.stdout, &sum)
	if r.code != 0 || sum.Inserted != 3 || len(sum.Skipped) != 1 || sum.Skipped[0].Line != 3 || sum.Skipped[0].File != bad {
		t.Fatalf("skip-invalid: %+v %s", sum, r.stderr)
	}

	// Drafts can be left out.
	var s stats
	decodeJSON(t, mustGavel(t, db, "records", "stats", "--exclude-status", "draft", "--json"), &s)
	if s.Total != 4 || s.ByStatus["draft"] != 0 {
		t.Fatalf("stats without drafts %+v", s)
	}
}

func TestCLIUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gavel.db")
	help := mustGavel(t, db, "--help")
	for _, c := range []string{"ingest", "records", "split", "version"} {
		if !strings.Contains(help, "\n  "+c+" ") {
			t.Errorf("--help does not list %s:\n%s", c, help)
		}
	}
	if v := mustGavel(t, db, "version"); !strings.HasPrefix(v, "gavel ") {
		t.Errorf("version: %q", v)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"ingest"}, 2, "requires at least 1 arg"},
		{[]string{"ingest", "--nope", "x"}, 2, "unknown flag"},
		{[]string{"ingest", "x.jsonl", "--format", "csv"}, 2, "want native, map or swebench"},
		{[]string{"ingest", "x.jsonl", "--map", "id=a"}, 2, "task is not mapped"},
		{[]string{"split", "s", "--train", "0.9"}, 2, "must sum to 1"},
		{[]string{"split", "show", "none"}, 1, `split "none": not found`},
		{[]string{"ingest", "does-not-exist.jsonl"}, 1, "no such file"},
	} {
		r := gavel(t, db, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("gavel %v: exit %d, stderr %q; want exit %d with %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
	}
}

func TestDBFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "env.db")
	cmd := exec.Command(gavelBin, "records", "stats", "--json")
	cmd.Env = append(os.Environ(), "GAVEL_DB="+db)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("GAVEL_DB not used: %v", err)
	}
}

func TestIngestSWEBench(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	preds := filepath.Join(dir, "preds.jsonl")
	gold := filepath.Join(dir, "gold.jsonl")
	os.WriteFile(preds, []byte(
		`{"instance_id":"astropy__astropy-12907","model_name_or_path":"agent","model_patch":"diff --git a/x b/x","resolved":true}`+"\n"+
			`{"instance_id":"django__django-11099","model_name_or_path":"agent","model_patch":"","resolved":false}`+"\n"), 0o644)
	os.WriteFile(gold, []byte(
		`{"instance_id":"astropy__astropy-12907","patch":"gold diff","problem_statement":"separability matrix is wrong"}`+"\n"+
			`{"instance_id":"django__django-11099","patch":"gold 2","problem_statement":"UsernameValidator allows trailing newline"}`+"\n"), 0o644)
	mustGavel(t, db, "ingest", preds, "--format", "swebench", "--gold", gold)
	out := mustGavel(t, db, "records", "export", "-o", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("export: %s", out)
	}
	var r struct {
		ID, Task, Candidate, Reference, Group string
		Outcome                               struct{ Label, Status, Source string }
	}
	decodeJSON(t, lines[0], &r)
	if r.ID != "agent/astropy__astropy-12907" || r.Task != "separability matrix is wrong" || r.Reference != "gold diff" ||
		r.Group != "astropy__astropy-12907" || r.Outcome.Label != "pass" || r.Outcome.Status != "passed" || r.Outcome.Source != "tests" {
		t.Fatalf("first record %+v", r)
	}
	decodeJSON(t, lines[1], &r)
	if r.Outcome.Label != "fail" || r.Candidate != "" || r.Reference != "gold 2" {
		t.Fatalf("second record %+v", r)
	}
	if r := gavel(t, db, "ingest", preds, "--gold", gold); r.code != 2 || !strings.Contains(r.stderr, "--gold: only for the swebench format") {
		t.Fatalf("--gold without the format: %+v", r)
	}
}

func TestExecCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc TestX(t *testing.T) {\n\tassert.Equal(t, 2, 1+1)\n}\n"), 0o644)
	var res struct {
		Status string
		Run    struct {
			Isolation struct{ Network string }
		}
	}
	decodeJSON(t, mustGavel(t, filepath.Join(dir, "g.db"), "exec", "--lang", "go", dir), &res)
	if res.Status != "passed" || res.Run.Isolation.Network == "" {
		t.Fatalf("go package with testify: %+v", res)
	}
	py := filepath.Join(dir, "p.py")
	os.WriteFile(py, []byte("assert sum([1, 2]) == 4\n"), 0o644)
	decodeJSON(t, mustGavel(t, filepath.Join(dir, "g.db"), "exec", "--lang", "python", py), &res)
	if res.Status != "failed" {
		t.Fatalf("failing python script: %+v", res)
	}
	// --max-disk: what a program writes past it is refused inside.
	os.WriteFile(py, []byte("n = 0\ntry:\n    for i in range(4):\n        open('f%d' % i, 'wb').write(b'x' * (5 << 20))\n        n += 1\nexcept OSError as e:\n    print(n, e.errno)\n"), 0o644)
	var disk struct {
		Run struct {
			Stdout    string
			Isolation struct{ Filesystem string }
		}
	}
	decodeJSON(t, mustGavel(t, filepath.Join(dir, "g.db"), "exec", "--lang", "python", "--max-disk", "8", py), &disk)
	if disk.Run.Stdout != "1 28\n" || !strings.Contains(disk.Run.Isolation.Filesystem, "tmpfs of 8 MiB") {
		t.Fatalf("--max-disk 8: %+v", disk)
	}
}
