package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/githubtest"
)

// gavel import github against a fake GitHub Enterprise API: the agent's
// pull requests since a date become records; a second import sends only
// conditional requests and stores nothing new; the records can be
// exported like any others.
func TestImportGitHubCommand(t *testing.T) {
	f, srv := githubtest.New(t)
	githubtest.AgentScenario(f)
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	db := filepath.Join(t.TempDir(), "gavel.db")
	args := []string{"import", "github", "--repo", "Codertocat/Hello-World", "--base-url", srv.URL + "/api/v3/",
		"--author-pattern", `\[bot\]$`, "--since", "2026-11-20", "--json"}
	var first, second struct {
		Inserted, Unchanged, Matched int
		Requests                     int `json:"requests"`
		Conditional                  int `json:"conditional_requests"`
		NotModified                  int `json:"not_modified"`
	}
	decodeJSON(t, mustGavel(t, db, args...), &first)
	if first.Matched != 3 || first.Inserted != 5 || first.Requests == 0 || first.Conditional != 0 {
		t.Fatalf("first import: %+v", first)
	}
	decodeJSON(t, mustGavel(t, db, args...), &second)
	if second.Inserted != 0 || second.Unchanged != 5 || second.Conditional != second.Requests || second.NotModified != second.Requests {
		t.Fatalf("second import: %+v", second)
	}
	out := mustGavel(t, db, "records", "export", "-o", "-")
	for _, want := range []string{`"id":"Codertocat/Hello-World#5"`, `"status":"landed"`, `"id":"Codertocat/Hello-World#4/tests"`, `"status":"abandoned"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("export lacks %s:\n%s", want, out)
		}
	}
	hist := mustGavel(t, db, "records", "outcomes", "Codertocat/Hello-World#4")
	if !strings.Contains(hist, "abandoned") || !strings.Contains(hist, "Superseded by #5") {
		t.Fatalf("outcomes:\n%s", hist)
	}
	if r := gavel(t, db, "records", "outcomes", "nobody"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unknown record: %+v", r)
	}
	if r := gavel(t, db, "import", "github", "--repo", "Codertocat/Hello-World", "--since", "last week"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Fatalf("bad --since: %+v", r)
	}
}
