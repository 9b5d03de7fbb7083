package codehost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/internal/githubtest"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqldb"
)

const diff5 = githubtest.Diff5

var t0 = githubtest.T0

func scenario(f *githubtest.Fake) { githubtest.AgentScenario(f) }

func openStore(t *testing.T) *sqldb.DB {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*sqldb.DB)
}

// client is a go-github client of the fake server, through the
// conditional-request transport.
func client(t *testing.T, url string, db *sqldb.DB) (*github.Client, *codehost.Requests) {
	t.Helper()
	count := &codehost.Requests{}
	base := url + "/"
	gh, err := github.NewClient(github.WithURLs(&base, &base), github.WithAuthToken("ghp_test"),
		github.WithTransport(&codehost.ETagTransport{Base: http.DefaultTransport, Store: db, Count: count}))
	if err != nil {
		t.Fatal(err)
	}
	return gh, count
}

func all(t *testing.T, db *sqldb.DB) map[string]*record.Record {
	t.Helper()
	out := map[string]*record.Record{}
	if err := db.Records(context.Background(), record.Filter{}, func(r *record.Record) error {
		out[r.ID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]*record.Record) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

func TestImportGitHub(t *testing.T) {
	ctx := context.Background()
	f, srv := githubtest.New(t)
	scenario(f)
	db := openStore(t)
	var progress []string
	opt := codehost.GitHubOptions{Owner: "Codertocat", Repo: "Hello-World", Since: t0, Author: regexp.MustCompile(`\[bot\]$`),
		Progress: func(format string, args ...any) { progress = append(progress, fmt.Sprintf(format, args...)) }}

	// The first check-runs request meets a spent rate limit: the import
	// waits for the reset the API named and goes on.
	f.LimitOnce = "/repos/Codertocat/Hello-World/commits/"
	gh, _ := client(t, srv.URL, db)
	res, err := codehost.ImportGitHub(ctx, gh, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.PullRequests != 4 || res.Matched != 3 || res.Inserted != 5 || res.RateWaits != 1 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(strings.Join(progress, "\n"), "rate limit (5000 requests an hour) is used up until") {
		t.Fatalf("progress:\n%s", strings.Join(progress, "\n"))
	}
	first := f.Requests()
	var limited, pages int
	for _, s := range first {
		if s.Status == 403 {
			limited++
		}
		if s.Path == "/repos/Codertocat/Hello-World/pulls" {
			pages++
		}
	}
	// Three pages of two (#5 #4, #3 #2, #1): the third shows #1, updated
	// before --since, where the listing stops.
	if limited != 1 || pages != 3 {
		t.Fatalf("%d refused, %d pages: %+v", limited, pages, first)
	}

	recs := all(t, db)
	if got := keys(recs); got != "Codertocat/Hello-World#3 Codertocat/Hello-World#4 Codertocat/Hello-World#4/tests Codertocat/Hello-World#5 Codertocat/Hello-World#5/tests" {
		t.Fatalf("records %s", got)
	}
	r5 := recs["Codertocat/Hello-World#5"]
	if r5.Task != "Found a bug\n\nI'm having a problem with this." || r5.Group != "Codertocat/Hello-World#1347" || r5.Candidate != diff5 {
		t.Fatalf("#5: %+v", r5)
	}
	if r5.Outcome.Status != record.StatusLanded || r5.Outcome.Source != record.SourceReview || !r5.Outcome.At.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("#5 outcome %+v", r5.Outcome)
	}
	if r5.Context["checks"] != "build: success\ntest: failure" || r5.Context["head_sha"] != f.PRs[5].Head || r5.Context["base"] != "master" {
		t.Fatalf("#5 context %v", r5.Context)
	}
	var m struct {
		GitHub map[string]any `json:"github"`
	}
	if err := json.Unmarshal(r5.Meta, &m); err != nil || m.GitHub["author"] != "gavel-agent[bot]" || m.GitHub["linked_issue"] != 1347.0 ||
		m.GitHub["url"] != "https://github.com/Codertocat/Hello-World/pull/5" {
		t.Fatalf("#5 meta %s", r5.Meta)
	}
	t5 := recs["Codertocat/Hello-World#5/tests"]
	if t5.Outcome.Status != record.StatusFailed || t5.Outcome.Reason != "failed: test" || t5.Group != r5.Group || t5.Candidate != diff5 ||
		!t5.Outcome.At.Equal(t0.Add(4*time.Hour+time.Minute)) {
		t.Fatalf("#5 tests %+v", t5)
	}
	r4 := recs["Codertocat/Hello-World#4"]
	if r4.Outcome.Status != record.StatusAbandoned || r4.Outcome.Reason != "Superseded by #5, which fixes the cause." ||
		r4.Task != "Cache the config\n\nReads the config once." || r4.Group != "Codertocat/Hello-World#4" {
		t.Fatalf("#4 %+v", r4)
	}
	if recs["Codertocat/Hello-World#4/tests"].Outcome.Status != record.StatusPassed {
		t.Fatalf("#4 tests %+v", recs["Codertocat/Hello-World#4/tests"].Outcome)
	}
	if r3 := recs["Codertocat/Hello-World#3"]; r3.Outcome.Status != record.StatusDraft || r3.Context["checks"] != "build: success\ntest: in_progress" {
		t.Fatalf("#3 %+v", r3)
	}

	// Again, nothing changed: every request is conditional and answered
	// 304, and nothing is written.
	gh, count := client(t, srv.URL, db)
	res, err = codehost.ImportGitHub(ctx, gh, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 0 || res.NewOutcomes != 0 || res.Unchanged != 5 {
		t.Fatalf("again: %+v", res)
	}
	again := f.Requests()
	for _, s := range again {
		if s.IfNoneMatch == "" || s.Status != http.StatusNotModified {
			t.Fatalf("not a conditional request answered 304: %+v", s)
		}
	}
	if n := count.Sent.Load(); n != int64(len(again)) || count.Conditional.Load() != n || count.NotModified.Load() != n || n < 10 {
		t.Fatalf("sent %d, conditional %d, not modified %d; the server saw %d", n, count.Conditional.Load(), count.NotModified.Load(), len(again))
	}

	// #4 is reopened and merged; #3's head moves to another commit and its
	// checks pass. #4 gains an outcome version; #3 keeps its record and
	// gains a revision.
	f.Lock()
	pr4 := f.PRs[4]
	pr4.Merged, pr4.MergedAt, pr4.ClosedAt, pr4.UpdatedAt = true, t0.Add(6*time.Hour), t0.Add(6*time.Hour), t0.Add(6*time.Hour)
	pr3 := f.PRs[3]
	pr3.Head, pr3.UpdatedAt = "3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f", t0.Add(7*time.Hour)
	pr3.Diff += "+\tlogSlowEvery(q, time.Second)\n"
	pr3.Runs = []githubtest.Run{githubtest.Done("build", "success", t0.Add(7*time.Hour))}
	f.Unlock()
	gh, _ = client(t, srv.URL, db)
	res, err = codehost.ImportGitHub(ctx, gh, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.NewOutcomes != 1 || res.Revisions != 1 || res.Inserted != 2 {
		t.Fatalf("after changes: %+v", res)
	}
	recs = all(t, db)
	if recs["Codertocat/Hello-World#4"].Outcome.Status != record.StatusLanded {
		t.Fatalf("#4 now %+v", recs["Codertocat/Hello-World#4"].Outcome)
	}
	hist, err := db.Outcomes(ctx, "Codertocat/Hello-World#4")
	if err != nil || len(hist) != 2 || hist[0].Outcome.Status != record.StatusAbandoned || hist[1].Outcome.Status != record.StatusLanded {
		t.Fatalf("#4 history %+v %v", hist, err)
	}
	if r3 := recs["Codertocat/Hello-World#3"]; r3.Candidate == pr3.Diff || r3.Outcome.Status != record.StatusDraft {
		t.Fatalf("#3 changed: %+v", r3)
	}
	rev := recs["Codertocat/Hello-World#3@3f3f3f3f3f3f"]
	if rev == nil || rev.Candidate != pr3.Diff || rev.Outcome.Status != record.StatusDraft || rev.Group != "Codertocat/Hello-World#3" {
		t.Fatalf("revision %+v (records %s)", rev, keys(recs))
	}
	if tr := recs["Codertocat/Hello-World#3@3f3f3f3f3f3f/tests"]; tr == nil || tr.Outcome.Status != record.StatusPassed {
		t.Fatalf("revision's tests %+v", tr)
	}
}

// --label keeps pull requests that carry it.
func TestImportGitHubLabel(t *testing.T) {
	f, srv := githubtest.New(t)
	scenario(f)
	db := openStore(t)
	gh, _ := client(t, srv.URL, db)
	res, err := codehost.ImportGitHub(context.Background(), gh, db, codehost.GitHubOptions{Owner: "Codertocat", Repo: "Hello-World", Label: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(all(t, db)); res.PullRequests != 5 || res.Matched != 1 || got != "Codertocat/Hello-World#5 Codertocat/Hello-World#5/tests" {
		t.Fatalf("%+v: %s", res, got)
	}
}

// A diff over the cap is cut at a line's end and says where.
func TestImportGitHubCapsTheDiff(t *testing.T) {
	f, srv := githubtest.New(t)
	scenario(f)
	db := openStore(t)
	gh, _ := client(t, srv.URL, db)
	if _, err := codehost.ImportGitHub(context.Background(), gh, db, codehost.GitHubOptions{Owner: "Codertocat", Repo: "Hello-World",
		Label: "agent", MaxDiffBytes: 120}); err != nil {
		t.Fatal(err)
	}
	r := all(t, db)["Codertocat/Hello-World#5"]
	kept := "" // the whole lines within 120 bytes
	for _, line := range strings.SplitAfter(diff5, "\n") {
		if len(kept)+len(line) > 120 {
			break
		}
		kept += line
	}
	want := kept + fmt.Sprintf("[gavel: the diff is cut here, after %d of its %d bytes]\n", len(kept), len(diff5))
	if len(kept) < 60 || r.Candidate != want {
		t.Fatalf("candidate %q, want %q", r.Candidate, want)
	}
}

// An import stopped part-way keeps the pull requests it stored, and the
// next one finishes the set: the same records as one uninterrupted import.
func TestImportGitHubResumes(t *testing.T) {
	f, srv := githubtest.New(t)
	scenario(f)
	opt := codehost.GitHubOptions{Owner: "Codertocat", Repo: "Hello-World"}

	whole := openStore(t)
	gh, _ := client(t, srv.URL, whole)
	if _, err := codehost.ImportGitHub(context.Background(), gh, whole, opt); err != nil {
		t.Fatal(err)
	}

	db := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	stored := 0
	opt.Progress = func(format string, args ...any) {
		if strings.HasPrefix(format, "%s: %s") { // a pull request's records are about to be stored
			stored++
			if stored == 2 {
				cancel()
			}
		}
	}
	gh, _ = client(t, srv.URL, db)
	if _, err := codehost.ImportGitHub(ctx, gh, db, opt); err == nil {
		t.Fatal("the stopped import says it finished")
	}
	part := all(t, db)
	if len(part) == 0 || len(part) >= len(all(t, whole)) {
		t.Fatalf("stopped import stored %s", keys(part))
	}
	opt.Progress = nil
	gh, _ = client(t, srv.URL, db)
	res, err := codehost.ImportGitHub(context.Background(), gh, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, want := all(t, db), all(t, whole)
	if keys(got) != keys(want) || res.Unchanged == 0 {
		t.Fatalf("resumed: %s (%+v), want %s", keys(got), res, keys(want))
	}
	for id, r := range want {
		if got[id].Outcome != r.Outcome || got[id].Candidate != r.Candidate || got[id].Task != r.Task {
			t.Fatalf("%s differs:\n%+v\n%+v", id, got[id], r)
		}
	}
}

// --with-files: each file a pull request changes, as it was at the base
// commit, through the contents API; a file the base commit lacks is left
// out.
func TestImportGitHubWithFiles(t *testing.T) {
	f, srv := githubtest.New(t)
	scenario(f)
	retry := "package fetch\n\n" + strings.Repeat("// padding\n", 7) + "func fetch(url string) ([]byte, error) {\n\treturn get(url)\n}\n"
	f.Files = map[string]map[string]string{githubtest.BaseSHA: {"retry.go": retry}}
	db := openStore(t)
	gh, _ := client(t, srv.URL, db)
	if _, err := codehost.ImportGitHub(context.Background(), gh, db, codehost.GitHubOptions{Owner: "Codertocat", Repo: "Hello-World", WithFiles: true}); err != nil {
		t.Fatal(err)
	}
	recs := all(t, db)
	files := recs["Codertocat/Hello-World#5"].Context["files"]
	if !strings.HasPrefix(files, "=== retry.go (before the change, at f95f852bd8fc; 12 lines) ===\n"+retry) {
		t.Fatalf("#5's context.files:\n%s", files)
	}
	if got, ok := recs["Codertocat/Hello-World#4"].Context["files"]; ok {
		t.Fatalf("#4 changes config.go, which the base commit lacks, yet has files:\n%s", got)
	}
}
