package main_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
)

// The gate's exit codes are a contract CI scripts rely on (issue 30): 0
// the judge passed the change, 1 it failed it, 4 no verdict (the service
// unreachable, refusing the token, failing, or its answer unreadable), 2
// a call the service calls wrong; --on-no-verdict fail|pass maps 4 to 1
// or 0. A fake service speaks the real API (/v1/judge, its JSON and its
// error bodies).
func TestGateExitCodes(t *testing.T) {
	status, verdict := http.StatusOK, "pass"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/judge" || r.Header.Get("Authorization") != "Bearer gvl_test" {
			t.Errorf("unexpected request %s %s (auth %q)", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			json.NewEncoder(w).Encode(map[string]any{"error": http.StatusText(status)})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"change_id": "acme/app#7", "verdict": verdict, "reasoning": "because",
			"parse_error": map[bool]string{true: "no JSON in the answer"}[verdict == "invalid"], "judge": "passfail", "version": "abc", "model": "m"})
	}))
	defer srv.Close()
	// An address where nothing listens: a service that is down.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + lis.Addr().String()
	lis.Close()

	dir := t.TempDir()
	task, diff := filepath.Join(dir, "task.txt"), filepath.Join(dir, "change.diff")
	os.WriteFile(task, []byte("Close the file.\n"), 0o644)
	os.WriteFile(diff, []byte("+defer f.Close()\n"), 0o644)
	gate := func(url string, extra ...string) result {
		cmd := exec.Command(gavelBin, append([]string{"gate", "--server", url, "--judge", "passfail", "--change-id", "acme/app#7",
			"--task", task, "--candidate", diff}, extra...)...)
		cmd.Env = append(os.Environ(), "GAVEL_TOKEN=gvl_test", "GAVEL_SERVER=")
		return runCmd(t, cmd)
	}
	cases := []struct {
		name    string
		url     string
		status  int
		verdict string
		extra   []string
		code    int
		says    string
	}{
		{"pass", srv.URL, 200, "pass", nil, 0, "PASS"},
		{"fail", srv.URL, 200, "fail", nil, 1, "the judge failed change acme/app#7"},
		{"service down", down, 0, "", nil, 4, "no verdict"},
		{"service down, --on-no-verdict fail", down, 0, "", []string{"--on-no-verdict", "fail"}, 1, "no verdict"},
		{"service down, --on-no-verdict pass", down, 0, "", []string{"--on-no-verdict", "pass"}, 0, "passing, as --on-no-verdict pass says"},
		{"unreadable answer", srv.URL, 200, "invalid", nil, 4, "could not be read (no JSON in the answer)"},
		{"service error", srv.URL, 500, "", nil, 4, "500"},
		{"token refused", srv.URL, 403, "", nil, 4, "403"},
		{"unknown judge", srv.URL, 404, "", nil, 2, "404"},
		{"bad --on-no-verdict", srv.URL, 200, "pass", []string{"--on-no-verdict", "maybe"}, 2, "want fail or pass"},
	}
	for _, c := range cases {
		status, verdict = c.status, c.verdict
		r := gate(c.url, c.extra...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.says) {
			t.Errorf("%s: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", c.name, r.code, c.code, c.says, r.stdout, r.stderr)
		}
	}
}

// Inspect's provider/name spelling is the same model as provider:name: one
// cache entry, one call (issue 30).
func TestSlashModelNamesShareTheCache(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "gavel.db")
	ask := func(model string) result {
		c := exec.Command(gavelBin, "--db", db, "ask", "--model", model, "--base-url", srv.URL+"/v1", "--json", "hello")
		c.Env = append(os.Environ(), "GAVEL_DB=", "OPENAI_API_KEY=k")
		return runCmd(t, c)
	}
	first, second := ask("openai/m"), ask("openai:m")
	if first.code != 0 || second.code != 0 {
		t.Fatalf("exit %d, %d: %s %s", first.code, second.code, first.stderr, second.stderr)
	}
	var a, b struct {
		Model  string `json:"model"`
		Cached bool   `json:"cached"`
	}
	decodeJSON(t, first.stdout, &a)
	decodeJSON(t, second.stdout, &b)
	if a.Model != "openai:m" || b.Model != "openai:m" || a.Cached || !b.Cached || srv.Count() != 1 {
		t.Fatalf("first %+v, second %+v, %d calls: want both openai:m, the second cached, one call", a, b, srv.Count())
	}
}
