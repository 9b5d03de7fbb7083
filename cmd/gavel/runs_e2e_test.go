package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/store"
)

type runJSON struct {
	ID        string            `json:"id"`
	Command   string            `json:"command"`
	Judge     string            `json:"judge"`
	Args      []string          `json:"args"`
	Records   int               `json:"records"`
	Roles     []string          `json:"roles"`
	Models    map[string]string `json:"models"`
	Result    json.RawMessage   `json:"result"`
	Text      string            `json:"text"`
	Simulated bool              `json:"simulated"`
}

type runRecordJSON struct {
	ID        string `json:"id"`
	Role      string `json:"role"`
	Outcome   string `json:"outcome"`
	Verdict   string `json:"verdict"`
	Reasoning string `json:"reasoning"`
	Teacher   *struct {
		Action        string `json:"action"`
		Justification string `json:"justification"`
	} `json:"teacher"`
}

type runRecordsJSON struct {
	ResultVersion int             `json:"result_version"`
	Run           string          `json:"run"`
	Role          string          `json:"role"`
	Total         int             `json:"total"`
	Records       []runRecordJSON `json:"records"`
}

// lastRun is the newest run of a command.
func lastRun(t *testing.T, db, command string) runJSON {
	t.Helper()
	var rs []runJSON
	decodeJSON(t, mustGavel(t, db, "runs", "list", "--command", command, "--json"), &rs)
	if len(rs) == 0 {
		t.Fatalf("no %s run recorded", command)
	}
	return rs[0]
}

// After an eval, the run's false fails are exactly the records its
// confusion matrix counts as false fails (derived here from the verdicts
// the store keeps and the records' labels, not from the run), each with
// the judge's reasoning; an export read back gives the same records.
func TestRunsOpenAnEvalDownToTheRecords(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 160)
	var e struct {
		Prompt    string    `json:"prompt"`
		Confusion [2][2]int `json:"confusion"`
		N         int       `json:"n"`
	}
	decodeJSON(t, mustGavel(t, db, "eval", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--resamples", "200", "--json"), &e)
	run := lastRun(t, db, "eval")
	if run.Judge != "passfail" || run.Records != e.N || !slices.Contains(run.Args, "main:test") || len(run.Result) == 0 || !strings.Contains(run.Text, "scott_pi") {
		t.Fatalf("the eval's run: %+v", run)
	}

	// The false fails from the store's verdicts and the records' labels.
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := st.Verdicts(ctx, e.Prompt, "sim")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct{ ID, Label string }
	decodeJSON(t, mustGavel(t, db, "records", "list", "--split", "main:test", "--json"), &listed)
	want := map[string]string{}
	for _, r := range listed {
		if v, ok := vs[r.ID]; ok && r.Label == "pass" && v.Outcome == "fail" {
			want[r.ID] = v.Reasoning
		}
	}
	if len(want) != e.Confusion[1][0] || len(want) == 0 {
		t.Fatalf("%d false fails in the store, the confusion counts %d (want some)", len(want), e.Confusion[1][0])
	}
	var ff runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--false-fail", "--json"), &ff)
	if ff.ResultVersion != 1 || ff.Total != len(want) || len(ff.Records) != len(want) {
		t.Fatalf("runs records --false-fail: %d records (total %d), want %d", len(ff.Records), ff.Total, len(want))
	}
	for _, r := range ff.Records {
		if reason, ok := want[r.ID]; !ok || r.Reasoning != reason || reason == "" || r.Outcome != "pass" || r.Verdict != "fail" {
			t.Errorf("false fail %+v: want reasoning %q", r, reason)
		}
	}
	var fp runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID[:15], "--false-pass", "--json"), &fp)
	if fp.Total != e.Confusion[0][1] {
		t.Fatalf("false passes %d, the confusion counts %d", fp.Total, e.Confusion[0][1])
	}
	if out := mustGavel(t, db, "runs", "records", run.ID, "--false-fail"); !strings.Contains(out, ff.Records[0].ID) {
		t.Fatalf("the text of runs records lacks %s:\n%s", ff.Records[0].ID, out)
	}
	if r := gavel(t, db, "runs", "records", run.ID, "--false-fail", "--false-pass"); r.code != 2 {
		t.Fatalf("two selections at once: exit %d", r.code)
	}

	// Export and read back.
	out := filepath.Join(dir, "run.jsonl")
	mustGavel(t, db, "runs", "export", run.ID, "-o", out)
	var all runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--json"), &all)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var back []runRecordJSON
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r runRecordJSON
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		back = append(back, r)
	}
	if fmt.Sprint(back) != fmt.Sprint(all.Records) || len(back) != e.N {
		t.Fatalf("the export (%d lines) is not the run's records (%d)", len(back), len(all.Records))
	}

	// The same eval again, from the cache: a new run that sent nothing,
	// and no verdict differs.
	mustGavel(t, db, "eval", "--judge", "passfail", "--split", "main:test", "--model", "sim", "--resamples", "200")
	again := lastRun(t, db, "eval")
	if again.ID == run.ID {
		t.Fatal("the rerun recorded no run of its own")
	}
	var d struct {
		Common  int   `json:"common"`
		Records []any `json:"records"`
	}
	decodeJSON(t, mustGavel(t, db, "runs", "diff", run.ID, again.ID, "--json"), &d)
	if d.Common != e.N || len(d.Records) != 0 {
		t.Fatalf("diff of a run and its rerun: %+v", d)
	}
	show := mustGavel(t, db, "runs", "show", again.ID)
	if !strings.Contains(show, "0 sent") || !strings.Contains(show, "confusion (outcome by verdict)") {
		t.Fatalf("runs show of the rerun:\n%s", show)
	}
}

// A calibration's run keeps the teacher's decisions on train and both
// prompts' verdicts on test.
func TestRunsOfACalibration(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 120)
	mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "1", "--resamples", "100")
	run := lastRun(t, db, "calibrate")
	if !slices.Equal(run.Roles, []string{"test: calibrated", "test: original", "train: teacher"}) {
		t.Fatalf("roles %v", run.Roles)
	}
	var tr runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--role", "train: teacher", "--json"), &tr)
	if tr.Total == 0 {
		t.Fatal("no teacher decisions in the run")
	}
	for _, r := range tr.Records {
		if r.Teacher == nil || r.Teacher.Action == "" || (r.Teacher.Action != "unreadable" && r.Teacher.Justification == "") {
			t.Fatalf("a training record without the teacher's decision: %+v", r)
		}
	}
	var orig, cal runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--role", "test: original", "--json"), &orig)
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--json"), &cal)
	if cal.Role != "test: calibrated" || cal.Total != orig.Total || cal.Total == 0 {
		t.Fatalf("test parts: calibrated %d (%s), original %d", cal.Total, cal.Role, orig.Total)
	}
}

// No API key reaches the store: not in a run's command line, not
// anywhere in the database file.
func TestNoAPIKeyInTheStore(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(*llmtest.Call) string { return `{"reasoning":"fine","verdict":"pass"}` }
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	in := filepath.Join(dir, "records.jsonl")
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"id":"r%d","task":"task %d","candidate":"patch %d","outcome":{"status":"passed"}}`+"\n", i, i, i)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	mustGavel(t, db, "ingest", in)
	mustGavel(t, db, "split", "all", "--train", "0", "--val", "0", "--test", "1", "--allow-small")
	const key = "sk-gavel-test-SECRET-0123456789"
	cmd := exec.Command(gavelBin, "--db", db, "eval", "--judge", "passfail", "--split", "all:test", "--model", "openai:m",
		"--base-url", srv.URL+"/v1", "--resamples", "50")
	cmd.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY="+key)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	if !slices.ContainsFunc(srv.Calls(), func(c *llmtest.Call) bool { return strings.Contains(c.Header.Get("Authorization"), key) }) {
		t.Fatal("the fake server never saw the key: the test proves nothing")
	}
	run := lastRun(t, db, "eval")
	if run.Models["openai:m"] != srv.URL+"/v1" {
		t.Fatalf("the run's models %v lack the base URL", run.Models)
	}
	files, _ := filepath.Glob(db + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(key)) || bytes.Contains(data, []byte("SECRET-0123")) {
			t.Fatalf("%s holds the API key", f)
		}
	}
}

// A benchmark run keeps every program with its known and predicted
// scores, one role a judge or metric (the judge first); the viewer shows
// the confusion by score and each program's page.
func TestRunsOfABenchmark(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	bench := filepath.Join(dir, "bench.jsonl")
	var lines []string
	for i, code := range []string{"func Add(a, b int) int { return a + b }", "func Add(a, b int) int { return a - b }", "func Add(a, b int) int {\n\tx := a\n\treturn x + b\n}"} {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("Go/0#p%d", i), "problem": "Add", "lang": "go", "score": []int{5, 1, 4}[i],
			"prompt": "// Add returns a plus b.\nfunc Add(a, b int) int {", "code": code, "reference": "func Add(a, b int) int { return a + b }"})
		lines = append(lines, string(b))
	}
	os.WriteFile(bench, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	mustGavel(t, db, "bench", "run", "--bench", bench, "--judge", "passfail", "--model", "sim", "--sim-on-real", "--resamples", "50")
	run := lastRun(t, db, "bench run")
	if len(run.Roles) != 4 || !strings.HasPrefix(run.Roles[0], "passfail") || run.Records != 12 {
		t.Fatalf("the benchmark's run: roles %v, %d records", run.Roles, run.Records)
	}
	var recs struct {
		Records []struct {
			ID    string   `json:"id"`
			Known *int     `json:"known_score"`
			Score *float64 `json:"score"`
		} `json:"records"`
	}
	decodeJSON(t, mustGavel(t, db, "runs", "records", run.ID, "--json"), &recs)
	if len(recs.Records) != 3 || recs.Records[1].Known == nil || *recs.Records[1].Known != 1 || recs.Records[0].Score == nil {
		t.Fatalf("the judge's programs: %+v", recs.Records)
	}
	url := startViewer(t, db)
	page := httpGet(t, url+"/ui/runs/"+run.ID)
	if !strings.Contains(page, "Known score by predicted score") || !strings.Contains(page, `href="/ui/program?id=Go%2F0%23p1&amp;run=`+run.ID) {
		t.Fatalf("the benchmark's run page has no linked confusion by score:\n%s", page)
	}
	prog := httpGet(t, url+"/ui/program?id="+neturl.QueryEscape("Go/0#p1")+"&run="+run.ID)
	if !strings.Contains(prog, "return a - b") || !strings.Contains(prog, "known score <strong>1</strong>") {
		t.Fatalf("the program's page:\n%s", prog)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// The README's main command, gavel demo without --out, ends cleanly with
// its store removed (its run is then not recorded); with --out the store
// is kept and holds the demo's run.
func TestDemoWithAndWithoutItsStore(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(gavelBin, "demo", "--n", "300", "--resamples", "100")
	cmd.Env = append(os.Environ(), "GAVEL_DB=", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "store: removed") {
		t.Fatalf("demo without --out: %v\n%s", err, out)
	}
	if dbs, _ := filepath.Glob(filepath.Join(tmp, "gavel-demo-*", "gavel.db*")); len(dbs) != 0 {
		t.Fatalf("the demo left its store behind: %v", dbs)
	}
	kept := filepath.Join(tmp, "kept")
	db := filepath.Join(kept, "gavel.db")
	if r := mustGavel(t, filepath.Join(tmp, "unused.db"), "demo", "--n", "300", "--resamples", "100", "--out", kept); !strings.Contains(r, "runs list") {
		t.Fatalf("demo --out does not say how to open its runs:\n%s", r)
	}
	if run := lastRun(t, db, "demo"); !run.Simulated {
		t.Fatalf("the demo's run: %+v", run)
	}
}
