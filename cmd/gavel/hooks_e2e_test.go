package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/githubtest"
)

// gavel serve with the webhook's secret and a GitHub token in its
// environment: a signed delivery about a pull request it never judged
// makes its records from the (fake Enterprise) API; a delivery signed with
// another secret is refused and stores nothing.
func TestServeGitHubWebhook(t *testing.T) {
	f, api := githubtest.New(t)
	githubtest.AgentScenario(f)
	t.Setenv("GAVEL_GITHUB_WEBHOOK_SECRET", "s3cret")
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	db := filepath.Join(t.TempDir(), "gavel.db")
	url := serveProcess(t, db, "--model", "sim", "--sim-on-real", "--github-base-url", api.URL+"/api/v3/")
	post := func(payload []byte, secret, delivery string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", url+"/v1/hooks/github", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, payload))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	ev := f.PullRequestEvent("closed", f.PRs[5])
	if code, out := post(ev, "another", "d-0"); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d %v", code, out)
	}
	if got := mustGavel(t, db, "records", "export", "-o", "-"); strings.TrimSpace(got) != "" {
		t.Fatalf("a refused delivery stored records:\n%s", got)
	}
	code, out := post(ev, "s3cret", "d-1")
	outcomes, _ := out["outcomes"].([]any)
	if code != http.StatusOK || len(outcomes) != 2 {
		t.Fatalf("signed delivery: %d %v", code, out)
	}
	got := mustGavel(t, db, "records", "export", "-o", "-")
	for _, want := range []string{`"id":"Codertocat/Hello-World#5"`, `"status":"landed"`, `"id":"Codertocat/Hello-World#5/tests"`, `"status":"failed"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("export lacks %s:\n%s", want, got)
		}
	}
	if code, out := post(ev, "s3cret", "d-1"); code != http.StatusOK || out["replay"] != true {
		t.Fatalf("replay: %d %v", code, out)
	}
}
