package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/gittest"
	"github.com/gavelhq/gavel/llm/llmtest"
)

// readmeBlock returns the command lines of the README's "Using it" block.
func readmeBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Using it\n")
	if !ok {
		t.Fatal(`README.md has no "## Using it" section`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal(`the "Using it" section has no sh block`)
	}
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

var (
	reComment  = regexp.MustCompile(`\s+#\s.*$`)
	reOptional = regexp.MustCompile(`\s*\[[^\[\]]*\]`)
)

// words splits a command line as a shell would (quotes, no expansion).
func words(line string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			in = false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// readmeCommands turns one README line into the command lines to run: the
// comment and the optional [parts] dropped, "A | gavel B" and "a|b|c"
// alternatives of a subcommand run one by one; other alternatives take
// the first.
func readmeCommands(line string) []string {
	line = reComment.ReplaceAllString(line, "")
	for reOptional.MatchString(line) {
		line = reOptional.ReplaceAllString(line, "")
	}
	if strings.HasPrefix(line, "gavel prompts list|show HASH|diff A B") {
		return []string{"gavel prompts list", "gavel prompts show HASH", "gavel prompts diff A B"}
	}
	var out []string
	for _, part := range strings.Split(line, " | gavel ") {
		if !strings.HasPrefix(part, "gavel ") {
			part = "gavel " + part
		}
		var ws []string
		for _, w := range words(part) {
			if !strings.HasPrefix(w, "'") {
				w, _, _ = strings.Cut(w, "|")
			}
			ws = append(ws, w)
		}
		out = append(out, strings.Join(ws, " "))
	}
	return out
}

// Every command line of the README's "Using it" block runs as written on a
// fresh store of the simulated world (--model sim), its placeholders
// filled in. Lines that need the network (GitHub, Gerrit) are named; a
// line that serves until stopped (view) is covered by its own test. The
// only additions are bounds on how much work a line does (--limit on
// bench build and acr), said beside each.
func TestREADMECommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README command")
	}
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	db := filepath.Join(dir, "gavel.db")
	run := func(args []string, dbFile string) result {
		cmd := exec.Command(gavelBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GAVEL_DB="+dbFile, "GAVEL_MODEL=", "OPENAI_API_KEY=k")
		return runCmd(t, cmd)
	}
	must := func(args ...string) string {
		r := run(args, db)
		if r.code != 0 {
			t.Fatalf("gavel %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The inputs the lines read: a simulated world, a SWE-bench pair, two
	// rating tables, a program, a batch result.
	must("sim", "records", "--n", "300", "--seed", "1", "-o", filepath.Join(dir, "records.jsonl"))
	write("preds.jsonl", `{"instance_id":"a__a-1","model_name_or_path":"agent","model_patch":"diff --git a/x b/x","resolved":true}`+"\n")
	write("swe-bench.jsonl", `{"instance_id":"a__a-1","patch":"gold","problem_statement":"fix it"}`+"\n")
	write("ratings.csv", "a,b,c\npass,pass,pass\nfail,fail,pass\npass,fail,pass\nfail,fail,fail\npass,pass,fail\nfail,pass,fail\n")
	write("scores.csv", "a,b,c\n1,1,2\n2,2,2\n3,2,3\n4,4,4\n5,4,5\n2,1,2\n")
	os.Mkdir(filepath.Join(dir, "pkg"), 0o755)
	// A clone and the changes made on it (ingest --repo).
	app := gittest.Init(t)
	os.WriteFile(filepath.Join(app, "add.go"), []byte("package add\n\nfunc Add(a, b int) int { return a + b }\n"), 0o644)
	gittest.Git(t, app, "add", ".")
	gittest.Git(t, app, "commit", "-q", "-m", "base")
	write("changes.jsonl", `{"id":"c1","task":"Add.","candidate":"--- a/add.go\n+++ b/add.go\n@@ -3 +3 @@\n-func Add(a, b int) int { return a + b }\n+func Add(a, b int) int { return a - b }\n","outcome":{"status":"failed"}}`+"\n")
	write("pkg/add_test.go", "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif 1+1 != 2 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n")

	// What each placeholder stands for; some are filled from the store as
	// the lines run.
	fill := map[string]string{
		"FILE...": "records.jsonl", "J": "passfail", "M": "sim", "M2": "sim", "M3": "sim", "NAME": "main", "S": "1",
		"DIR": filepath.Join(dir, "demo"), "PATH": "pkg", "COL": "a", "C1,C2,C3": "a,b,c", "openai:NAME": "openai:m",
		"http://127.0.0.1:8000/v1": srv.URL + "/v1", "../app": app,
	}
	// Separate stores for the lines that import real data, which the
	// simulated model refuses to judge.
	realDB := filepath.Join(dir, "real.db")
	dbFor := map[string]string{"gavel ingest FILE --map": realDB, "gavel ingest preds.jsonl": realDB, "gavel ingest changes.jsonl": realDB}
	// Placeholders that mean different files on different lines.
	fileFor := map[string]string{"gavel ingest FILE --map": "examples/codejudge/python_completions.jsonl", "gavel agreement FILE --coders": "scores.csv", "gavel agreement FILE --a": "ratings.csv"}
	// Lines not run here, and why.
	skip := map[string]string{
		"gavel import github": "reaches GitHub (TestImportGitHub runs it against a fake server)",
		"gavel import gerrit": "reaches a Gerrit server (TestImportGerrit runs it against a fake one)",
		"gavel view":          "serves until stopped (TestViewer runs it)",
	}
	// Bounds on the work of heavy lines.
	bound := map[string][]string{"gavel sim study": {"--worlds", "2", "--n", "200", "--max-iter", "1", "--resamples", "100"}, "gavel bench build": {"--limit", "2"}, "gavel acr --instructions": {"--limit", "3"}, "gavel acr check": {"--limit", "3"}}
	// Lines whose documented use is to fail: a gate under its bar.
	gate := map[string]string{"--fail-under-pi": "is under --fail-under-pi"}
	// What a line needs that an earlier one did not leave: a pending call
	// to export, and the batch's answers to import.
	before := map[string]func(){
		"gavel batch export": func() {
			if r := run([]string{"judge", "--judge", "passfail", "--split", "main:test", "--model", "openai:m", "--offline", "--limit", "2"}, db); r.code != 3 {
				t.Fatalf("an offline judge to leave pending calls: exit %d\n%s", r.code, r.stderr)
			}
		},
		"gavel batch import": func() {
			in, err := os.Open(filepath.Join(dir, "requests.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			out, err := os.Create(filepath.Join(dir, "results.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if err := llmtest.AnswerOpenAIBatch(in, out, llmtest.BatchOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}

	ran := 0
	for _, line := range readmeBlock(t) {
		if why := prefixed(skip, line); why != "" {
			t.Logf("not run: %s: %s", line, why)
			continue
		}
		cmds := readmeCommands(line)
		if len(cmds) == 0 {
			t.Fatalf("README line not understood: %s", line)
		}
		for _, c := range cmds {
			ws := words(c)[1:]
			cols := 0
			for i, w := range ws {
				switch {
				case w == "FILE" && prefixed(fileFor, c) != "":
					ws[i] = prefixed(fileFor, c)
				case w == "COL":
					ws[i] = []string{"a", "b"}[cols%2]
					cols++
				case w == "ID" || w == "ID1" || w == "ID2":
					ws[i] = runID(t, must, c, w)
				case w == "HASH" || w == "A" || w == "B" || w == "V1,V2":
					ws[i] = promptHashes(t, must, w)
				case w == "round2.lineage.jsonl":
					copyFile(t, filepath.Join(dir, "round1.lineage.jsonl"), filepath.Join(dir, w))
				case fill[w] != "":
					ws[i] = fill[w]
				}
			}
			ws = append(ws, bound[prefixOf(bound, c)]...)
			for k, fn := range before {
				if strings.HasPrefix(c, k) {
					fn()
				}
			}
			target := db
			if d := prefixed(dbFor, c); d != "" {
				target = d
			}
			r := run(ws, target)
			want := prefixed(gate, c)
			switch {
			case want != "" && (r.code == 0 || r.code == 1 && strings.Contains(r.stderr, want)):
			case r.code != 0:
				t.Errorf("README line %q ran as gavel %s: exit %d\n%s", line, strings.Join(ws, " "), r.code, r.stderr)
			}
			ran++
		}
	}
	if ran < 40 {
		t.Fatalf("only %d README commands ran", ran)
	}
}

// prefixed is the value of the first key that starts line (or is in it,
// for a flag), or "".
func prefixed(m map[string]string, line string) string {
	for k, v := range m {
		if strings.HasPrefix(line, k) || strings.HasPrefix(k, "--") && strings.Contains(line, " "+k) {
			return v
		}
	}
	return ""
}

func prefixOf(m map[string][]string, line string) string {
	for k := range m {
		if strings.HasPrefix(line, k) {
			return k
		}
	}
	return ""
}

// runID is a stored run for a README line: an eval run for records (its
// false fails), the last two judge runs for a diff, else the last run.
func runID(t *testing.T, must func(...string) string, line, w string) string {
	t.Helper()
	if strings.HasPrefix(line, "gavel records outcomes") {
		var rs []struct {
			ID string `json:"id"`
		}
		out := must("records", "list", "--json", "--limit", "1")
		decodeJSON(t, out, &rs)
		return rs[0].ID
	}
	command := ""
	switch {
	case strings.Contains(line, "--false-fail"):
		command = "eval"
	case w == "ID1" || w == "ID2":
		command = "judge"
	}
	args := []string{"runs", "list", "--json"}
	if command != "" {
		args = append(args, "--command", command)
	}
	var runs []struct {
		ID string `json:"id"`
	}
	decodeJSON(t, must(args...), &runs)
	if len(runs) == 0 {
		t.Fatalf("no %s run stored for %q", command, line)
	}
	if w == "ID2" && len(runs) > 1 {
		return runs[1].ID
	}
	return runs[0].ID
}

// promptHashes fills HASH, A, B (the first two stored versions) and V1,V2.
func promptHashes(t *testing.T, must func(...string) string, w string) string {
	t.Helper()
	var ps []struct {
		Hash string `json:"hash"`
	}
	decodeJSON(t, must("prompts", "list", "--json", "--judge", "rubric5"), &ps)
	if len(ps) < 2 {
		t.Fatalf("fewer than two prompt versions stored: %v", ps)
	}
	switch w {
	case "B":
		return ps[1].Hash
	case "V1,V2":
		return ps[0].Hash + "," + ps[1].Hash
	}
	return ps[0].Hash
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The block's lines are understood the same way every time: a check of
// the parser the test above relies on.
func TestREADMECommandParsing(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"gavel split show NAME | gavel split list", []string{"gavel split show NAME", "gavel split list"}},
		{"gavel exec --lang go|python PATH     # one program", []string{"gavel exec --lang go PATH"}},
		{"gavel calibrate --judge rubric5 --split main --model M [--teacher-model M2] [--report r.html]", []string{"gavel calibrate --judge rubric5 --split main --model M"}},
		{`gavel ask --model openai:NAME --base-url http://127.0.0.1:8000/v1 "hi"   # check`, []string{"gavel ask --model openai:NAME --base-url http://127.0.0.1:8000/v1 hi"}},
	} {
		if got := readmeCommands(c.line); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: got %q, want %q", c.line, got, c.want)
		}
	}
}

// The README's table of the simulated world over worlds is gavel sim
// study's output on its defaults, as it is now.
func TestREADMEStudyTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the study over five worlds")
	}
	out := mustGavel(t, filepath.Join(t.TempDir(), "unused.db"), "sim", "study")
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), strings.TrimRight(out, "\n")) {
		t.Fatalf("the README's table is not gavel sim study's output; regenerate it with go run ./cmd/gavel sim study:\n%s", out)
	}
}

// gavel sim study --keep --report: the page charts the gains over the
// worlds and lists every world; each world's kept store holds its
// calibrations as runs that open down to the records, teacher's reasons
// and verdicts.
func TestSimStudyOpensDownToTheRecords(t *testing.T) {
	dir := t.TempDir()
	keep, page := filepath.Join(dir, "worlds"), filepath.Join(dir, "study.html")
	var res struct {
		Worlds []struct {
			Seed  uint64 `json:"seed"`
			Store string `json:"store"`
			Gains []struct {
				Control, Judge, Run string
			} `json:"gains"`
		} `json:"worlds"`
	}
	r := gavel(t, filepath.Join(dir, "unused.db"), "sim", "study", "--worlds", "2", "--n", "200", "--max-iter", "1", "--resamples", "100",
		"--keep", keep, "--report", page, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "report written to "+page) {
		t.Fatalf("sim study: %+v", r)
	}
	decodeJSON(t, r.stdout, &res)
	if len(res.Worlds) != 2 || len(res.Worlds[0].Gains) != 6 || res.Worlds[1].Store != filepath.Join(keep, "world-2.db") {
		t.Fatalf("study: %s", r.stdout)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Simulated.", "Test gain over worlds", "Honest minus control", "<svg", res.Worlds[0].Gains[0].Run, "GAVEL_DB=" + res.Worlds[0].Store + " gavel view"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The world's honest passfail calibration, opened from its store.
	w := res.Worlds[0]
	var recs runRecordsJSON
	decodeJSON(t, mustGavel(t, w.Store, "runs", "records", w.Gains[0].Run, "--role", "train: teacher", "--json"), &recs)
	if w.Gains[0].Control != "honest" || w.Gains[0].Judge != "passfail" || len(recs.Records) == 0 {
		t.Fatalf("the world's honest passfail run %s: %d records", w.Gains[0].Run, len(recs.Records))
	}
	var runs []runJSON
	decodeJSON(t, mustGavel(t, w.Store, "runs", "list", "--json"), &runs)
	if len(runs) != 6 || !runs[0].Simulated {
		t.Fatalf("the world's runs: %d", len(runs))
	}
	// Too few worlds or records: a usage error naming the flag, and
	// nothing kept.
	for flag, args := range map[string][]string{"--worlds": {"--worlds", "1"}, "--n": {"--n", "20"}} {
		bad := filepath.Join(dir, "bad"+flag)
		r := gavel(t, filepath.Join(dir, "unused.db"), append([]string{"sim", "study", "--keep", bad}, args...)...)
		if _, err := os.Stat(bad); r.code != 2 || !strings.Contains(r.stderr, flag+":") || err == nil {
			t.Errorf("sim study %v: %+v (kept: %v)", args, r, err == nil)
		}
	}
}
