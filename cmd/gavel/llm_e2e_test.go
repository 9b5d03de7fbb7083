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

	"github.com/gavelhq/gavel/llm/llmtest"
)

type askResult struct {
	Key, Text string
	JSON      map[string]any
	Cached    bool
	Invalid   bool
	Attempts  int
	Usage     struct{ InputTokens, OutputTokens int64 } `json:"usage"`
}

func TestAskOpenAICompatibleServer(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "gavel.db")
	var r askResult
	decodeJSON(t, mustGavel(t, db, "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "hi", "--json"), &r)
	if r.Text != "echo: hi" || r.Cached || r.Attempts != 1 {
		t.Fatalf("first ask %+v", r)
	}
	// The rerun makes no call.
	decodeJSON(t, mustGavel(t, db, "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "hi", "--json"), &r)
	if !r.Cached || r.Text != "echo: hi" || srv.Count() != 1 {
		t.Fatalf("rerun %+v after %d calls", r, srv.Count())
	}
	// Human output: the answer on stdout, usage on stderr.
	res := gavel(t, db, "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "hi")
	if res.code != 0 || res.stdout != "echo: hi\n" || !strings.Contains(res.stderr, "from the cache") {
		t.Fatalf("human ask: %+v", res)
	}
	var s struct {
		Entries int   `json:"entries"`
		Hits    int64 `json:"hits"`
	}
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &s)
	if s.Entries != 1 || s.Hits != 2 {
		t.Fatalf("cache stats %+v", s)
	}
	// A budget too small for the next call's worst case: stop, exit 3.
	res = gavel(t, db, "ask", "--model", "openai:gpt-4o", "--base-url", srv.URL+"/v1", "--max-cost", "0.00001", "costly")
	if res.code != 3 || !strings.Contains(res.stderr, "cost budget reached") || srv.Count() != 1 {
		t.Fatalf("budget: %+v after %d calls", res, srv.Count())
	}
	// A server that keeps failing for reasons that pass: a clear message,
	// and a resumable stop (exit 3), with --json a JSON object on stdout.
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.ServerError }
	srv.RetryAfter = "0"
	res = gavel(t, db, "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "--max-attempts", "2", "other question")
	if res.code != 3 || !strings.Contains(res.stderr, "gave up after 2 attempts") || !strings.Contains(res.stderr, "HTTP 500") {
		t.Fatalf("failing server: %+v", res)
	}
	var stop struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
		Stopped  string `json:"stopped"`
	}
	res = gavel(t, db, "--json", "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "--max-attempts", "2", "other question")
	if err := json.Unmarshal([]byte(res.stdout), &stop); err != nil || res.code != 3 || stop.ExitCode != 3 || stop.Stopped != "transient" || !strings.Contains(stop.Error, "HTTP 500") {
		t.Fatalf("--json on a stop: %v %+v", err, res)
	}
	// A request the server refuses for good fails (exit 1), with --json too.
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.BadRequest }
	res = gavel(t, db, "--json", "ask", "--model", "openai:local-model", "--base-url", srv.URL+"/v1", "refused question")
	stop.Stopped = ""
	if err := json.Unmarshal([]byte(res.stdout), &stop); err != nil || res.code != 1 || stop.ExitCode != 1 || stop.Stopped != "" || stop.Error == "" {
		t.Fatalf("--json on a failure: %v %+v", err, res)
	}
	// A usage error, with --json, is a JSON object too.
	res = gavel(t, db, "--json", "ask", "--model", "nonsense:x", "q")
	if err := json.Unmarshal([]byte(res.stdout), &stop); err != nil || res.code != 2 || stop.ExitCode != 2 {
		t.Fatalf("--json on a usage error: %v %+v", err, res)
	}
}

func TestBatchRoundTripThroughFiles(t *testing.T) {
	schema := `{"type":"object","properties":{"verdict":{"enum":["pass","fail"]},"reasoning":{"type":"string"}},"required":["verdict","reasoning"]}`
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "gavel.db")
			schemaFile := filepath.Join(dir, "verdict.json")
			os.WriteFile(schemaFile, []byte(schema), 0o644)
			askArgs := []string{"ask", "--offline", "--model", format + ":judge-model", "--schema", schemaFile, "--schema-name", "verdict", "Is this patch right?"}
			res := gavel(t, db, askArgs...)
			if res.code != 3 || !strings.Contains(res.stderr, "1 model call(s) pending") || !strings.Contains(res.stderr, "gavel batch export") {
				t.Fatalf("offline ask: %+v", res)
			}
			reqFile := filepath.Join(dir, "requests.jsonl")
			mustGavel(t, db, "batch", "export", "--pending", "--format", format, "-o", reqFile)
			in, err := os.Open(reqFile)
			if err != nil {
				t.Fatal(err)
			}
			outFile := filepath.Join(dir, "results.jsonl")
			out, _ := os.Create(outFile)
			answer := llmtest.BatchOptions{Answer: func(c *llmtest.Call) string {
				return `{"verdict":"fail","reasoning":"batch answer to ` + c.LastUser + `"}`
			}}
			if format == "openai" {
				err = llmtest.AnswerOpenAIBatch(in, out, answer)
			} else {
				err = llmtest.AnswerAnthropicBatch(in, out, answer)
			}
			in.Close()
			out.Close()
			if err != nil {
				t.Fatal(err)
			}
			var imp struct{ Imported, Failed, Unknown int }
			decodeJSON(t, mustGavel(t, db, "batch", "import", outFile, "--json"), &imp)
			if imp.Imported != 1 || imp.Failed != 0 || imp.Unknown != 0 {
				t.Fatalf("import %+v", imp)
			}
			var r askResult
			decodeJSON(t, mustGavel(t, db, append(askArgs, "--json")...), &r)
			if !r.Cached || r.Invalid || r.JSON["verdict"] != "fail" || r.JSON["reasoning"] != "batch answer to Is this patch right?" {
				t.Fatalf("offline ask after import: %+v", r)
			}
		})
	}
}

// A real provider without its key fails at once, naming the key, with no
// retry (issue 13, item 8).
func TestMissingKeyFailsAtOnce(t *testing.T) {
	cmd := exec.Command(gavelBin, "--db", filepath.Join(t.TempDir(), "gavel.db"), "ask", "--model", "openai:gpt-4o", "hi")
	cmd.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "OPENAI_API_KEY is not set") || strings.Contains(errb.String(), "trying again") {
		t.Fatalf("exit %v; stderr %s", err, errb.String())
	}
}
