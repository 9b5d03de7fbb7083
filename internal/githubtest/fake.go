// Package githubtest is a fake GitHub REST API for tests: the parts a
// pull-request import reads, with bodies in GitHub's documented shapes
// (testdata), pagination by Link headers, rate-limit headers on every
// answer, ETags with 304 Not Modified, and a primary rate limit that can be
// made to run out once.
package githubtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed testdata/*.json
var testdata embed.FS

// Fake is the fake API's state; change it between imports under Lock.
type Fake struct {
	t  testing.TB
	mu sync.Mutex
	// Owner and Repo name the repository served.
	Owner, Repo string
	PRs         map[int]*PR
	Issues      map[int][2]string // title, body
	PageSize    int
	// Files are the repository's files by commit and path, served by the
	// contents API (GET /repos/O/R/contents/PATH?ref=SHA) in its shape,
	// base64 in lines of 60.
	Files map[string]map[string]string
	// LimitOnce names a path prefix whose next request is refused as over
	// the rate limit, with the reset a second ahead.
	LimitOnce string
	seen      []Request

	prJSON, runJSON, issueJSON, commentJSON, limitedJSON map[string]any
}

// PR is a pull request served.
type PR struct {
	Number                        int
	Title, Body, State, Author    string
	Merged                        bool
	MergedAt, ClosedAt, UpdatedAt time.Time
	Head, Diff                    string
	Labels                        []string
	Runs                          []Run
	Comments                      []Comment
}

// Run is a check run on a pull request's head.
type Run struct {
	Name, Status, Conclusion string
	CompletedAt              time.Time
}

// Comment is a comment on a pull request.
type Comment struct {
	Body string
	At   time.Time
}

// Request is a request the fake saw, with its answer's status.
type Request struct {
	Path, IfNoneMatch string
	Status            int
}

// Payload is a testdata file.
func Payload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// New starts a fake GitHub API for Codertocat/Hello-World, closed when the
// test ends.
func New(t testing.TB) (*Fake, *httptest.Server) {
	f := &Fake{t: t, Owner: "Codertocat", Repo: "Hello-World", PRs: map[int]*PR{}, Issues: map[int][2]string{}, PageSize: 2,
		prJSON: loadJSON(t, "pull_request.json"), runJSON: loadJSON(t, "check_run.json"), issueJSON: loadJSON(t, "issue.json"),
		commentJSON: loadJSON(t, "issue_comment.json"), limitedJSON: loadJSON(t, "rate_limited.json")}
	mux := http.NewServeMux()
	// Served at the root, as api.github.com does, and under /api/v3, as
	// GitHub Enterprise does.
	for _, prefix := range []string{"", "/api/v3"} {
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/pulls", f.list)
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/pulls/{n}", f.pull)
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/commits/{sha}/check-runs", f.checkRuns)
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/issues/{n}", f.issue)
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/issues/{n}/comments", f.comments)
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/contents/{path...}", f.contents)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		if f.LimitOnce != "" && strings.HasPrefix(strings.TrimPrefix(r.URL.Path, "/api/v3"), f.LimitOnce) {
			f.LimitOnce = ""
			f.rateHeaders(w, 0, time.Now().Add(time.Second))
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(f.limitedJSON)
			f.seen = append(f.seen, Request{r.URL.Path, r.Header.Get("If-None-Match"), 403})
			return
		}
		f.rateHeaders(w, 4999, time.Now().Add(time.Hour))
		mux.ServeHTTP(rec, r)
		f.seen = append(f.seen, Request{r.URL.Path, r.Header.Get("If-None-Match"), rec.status})
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (f *Fake) rateHeaders(w http.ResponseWriter, remaining int, reset time.Time) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// reply writes a body with an ETag, or 304 when the client has it.
func (f *Fake) reply(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
	sum := sha256.Sum256(body)
	etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	w.Header().Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(body)
}

func (f *Fake) replyJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Error(err)
	}
	f.reply(w, r, "application/json; charset=utf-8", b)
}

func (f *Fake) notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)
}

// BaseSHA is the base commit of every pull request served
// (pull_request.json's).
const BaseSHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"

func (f *Fake) contents(w http.ResponseWriter, r *http.Request) {
	path, ref := r.PathValue("path"), r.URL.Query().Get("ref")
	text, ok := f.Files[ref][path]
	if ref == "" || !ok {
		f.notFound(w)
		return
	}
	enc := base64.StdEncoding.EncodeToString([]byte(text))
	var lines []string
	for len(enc) > 60 {
		lines, enc = append(lines, enc[:60]), enc[60:]
	}
	lines = append(lines, enc)
	sum := sha256.Sum256([]byte(text))
	api := fmt.Sprintf("https://api.github.com/repos/%s/%s/contents/%s", f.Owner, f.Repo, path)
	f.replyJSON(w, r, map[string]any{"type": "file", "encoding": "base64", "size": len(text), "name": path[strings.LastIndexByte(path, '/')+1:],
		"path": path, "content": strings.Join(lines, "\n") + "\n", "sha": hex.EncodeToString(sum[:20]), "url": api + "?ref=" + ref,
		"git_url": nil, "html_url": nil, "download_url": nil, "_links": map[string]any{"self": api + "?ref=" + ref}})
}

// clone deep-copies a template.
func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func stamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (f *Fake) prObject(pr *PR) map[string]any {
	o := clone(f.prJSON)
	api := fmt.Sprintf("https://api.github.com/repos/%s/%s", f.Owner, f.Repo)
	o["number"] = pr.Number
	o["id"] = 279147437 + pr.Number
	o["url"] = fmt.Sprintf("%s/pulls/%d", api, pr.Number)
	o["html_url"] = fmt.Sprintf("https://github.com/%s/%s/pull/%d", f.Owner, f.Repo, pr.Number)
	o["title"], o["body"], o["state"] = pr.Title, pr.Body, pr.State
	o["merged"] = pr.Merged
	o["merged_at"], o["closed_at"], o["updated_at"] = stamp(pr.MergedAt), stamp(pr.ClosedAt), stamp(pr.UpdatedAt)
	o["user"].(map[string]any)["login"] = pr.Author
	o["head"].(map[string]any)["sha"] = pr.Head
	var labels []any
	for _, l := range pr.Labels {
		label := clone(f.prJSON["labels"].([]any)[0].(map[string]any))
		label["name"] = l
		labels = append(labels, label)
	}
	o["labels"] = labels
	return o
}

// sorted is the pull requests, most recently updated first.
func (f *Fake) sorted() []*PR {
	var out []*PR
	for _, pr := range f.PRs {
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out
}

func (f *Fake) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("state") != "all" || q.Get("sort") != "updated" || q.Get("direction") != "desc" {
		f.t.Errorf("list with %s", r.URL.RawQuery)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	all := f.sorted()
	last := max(1, (len(all)+f.PageSize-1)/f.PageSize)
	var items []any
	for i := (page - 1) * f.PageSize; i < min(len(all), page*f.PageSize); i++ {
		items = append(items, f.prObject(all[i]))
	}
	if items == nil {
		items = []any{}
	}
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	f.replyJSON(w, r, items)
}

func (f *Fake) pr(w http.ResponseWriter, r *http.Request) *PR {
	n, _ := strconv.Atoi(r.PathValue("n"))
	pr := f.PRs[n]
	if pr == nil {
		f.notFound(w)
	}
	return pr
}

func (f *Fake) pull(w http.ResponseWriter, r *http.Request) {
	pr := f.pr(w, r)
	if pr == nil {
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "diff") {
		f.reply(w, r, "text/plain; charset=utf-8", []byte(pr.Diff))
		return
	}
	f.replyJSON(w, r, f.prObject(pr))
}

func (f *Fake) checkRuns(w http.ResponseWriter, r *http.Request) {
	var runs []any
	for _, pr := range f.PRs {
		if pr.Head != r.PathValue("sha") {
			continue
		}
		for i, run := range pr.Runs {
			o := clone(f.runJSON)
			o["id"] = 128620228 + 100*pr.Number + i
			o["head_sha"] = pr.Head
			o["name"], o["status"] = run.Name, run.Status
			o["conclusion"], o["completed_at"] = nil, nil
			if run.Status == "completed" {
				o["conclusion"], o["completed_at"] = run.Conclusion, stamp(run.CompletedAt)
			}
			runs = append(runs, o)
		}
	}
	if runs == nil {
		runs = []any{}
	}
	f.replyJSON(w, r, map[string]any{"total_count": len(runs), "check_runs": runs})
}

func (f *Fake) issue(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	is, ok := f.Issues[n]
	if !ok {
		f.notFound(w)
		return
	}
	o := clone(f.issueJSON)
	o["number"], o["title"], o["body"] = n, is[0], is[1]
	f.replyJSON(w, r, o)
}

func (f *Fake) comments(w http.ResponseWriter, r *http.Request) {
	pr := f.pr(w, r)
	if pr == nil {
		return
	}
	var since time.Time
	if s := r.URL.Query().Get("since"); s != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, s); err != nil {
			f.t.Errorf("since %q: %v", s, err)
		}
	}
	out := []any{}
	for i, c := range pr.Comments {
		if c.At.Before(since) {
			continue
		}
		o := clone(f.commentJSON)
		o["id"] = 1 + 1000*pr.Number + i
		o["body"], o["created_at"], o["updated_at"] = c.Body, stamp(c.At), stamp(c.At)
		out = append(out, o)
	}
	f.replyJSON(w, r, out)
}

// Lock and Unlock guard changes to the served state.
func (f *Fake) Lock()   { f.mu.Lock() }
func (f *Fake) Unlock() { f.mu.Unlock() }

// Requests returns and forgets the requests seen so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.seen
	f.seen = nil
	return out
}

// Done is a check run that completed with a conclusion.
func Done(name, conclusion string, at time.Time) Run {
	return Run{Name: name, Status: "completed", Conclusion: conclusion, CompletedAt: at}
}

// Going is a check run still in progress.
func Going(name string) Run { return Run{Name: name, Status: "in_progress"} }

// Said is a comment made at a time.
func Said(body string, at time.Time) Comment { return Comment{Body: body, At: at} }

// Diff5 is the diff of pull request #5 in AgentScenario.
const Diff5 = `diff --git a/retry.go b/retry.go
index 3b18e51..a9c2f4e 100644
--- a/retry.go
+++ b/retry.go
@@ -10,7 +10,9 @@ func fetch(url string) ([]byte, error) {
-	return get(url)
+	for i := 0; i < 3; i++ {
+		if b, err := get(url); err == nil {
+			return b, nil
+		}
+	}
+	return nil, errGaveUp
 }
`

// T0 is the time around which AgentScenario places its pull requests.
var T0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// AgentScenario is a repository whose agent opened four pull requests and a
// person one:
//
//	#5 merged, closes issue #1347; one check failed
//	#4 closed unmerged with a comment; its checks passed
//	#3 open; a check still running
//	#2 a person's, merged
//	#1 the agent's, updated before --since
func AgentScenario(f *Fake) {
	f.Issues[1347] = [2]string{"Found a bug", "I'm having a problem with this."}
	f.PRs[5] = &PR{Number: 5, Title: "Retry fetches", Body: "Fixes #1347\n\nRetries a failed fetch three times.", State: "closed",
		Author: "gavel-agent[bot]", Merged: true, MergedAt: T0.Add(5 * time.Hour), ClosedAt: T0.Add(5 * time.Hour), UpdatedAt: T0.Add(5 * time.Hour),
		Head: "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a", Diff: Diff5, Labels: []string{"agent"},
		Runs: []Run{Done("build", "success", T0.Add(4*time.Hour)), Done("test", "failure", T0.Add(4*time.Hour+time.Minute))}}
	f.PRs[4] = &PR{Number: 4, Title: "Cache the config", Body: "Reads the config once.", State: "closed", Author: "gavel-agent[bot]",
		ClosedAt: T0.Add(4 * time.Hour), UpdatedAt: T0.Add(4 * time.Hour), Head: "4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b",
		Diff:     "diff --git a/config.go b/config.go\n--- a/config.go\n+++ b/config.go\n@@ -1 +1 @@\n-var cfg = load()\n+var cfg = sync.OnceValue(load)\n",
		Runs:     []Run{Done("build", "success", T0.Add(3*time.Hour)), Done("lint", "skipped", T0.Add(3*time.Hour))},
		Comments: []Comment{Said("Looks off to me.", T0.Add(time.Hour)), Said("Superseded by #5, which fixes the cause.", T0.Add(4*time.Hour-2*time.Second))}}
	f.PRs[3] = &PR{Number: 3, Title: "Log slow queries", Body: "", State: "open", Author: "gavel-agent[bot]",
		UpdatedAt: T0.Add(3 * time.Hour), Head: "3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c",
		Diff: "diff --git a/db.go b/db.go\n--- a/db.go\n+++ b/db.go\n@@ -5 +5,2 @@\n+\tlogSlow(q)\n",
		Runs: []Run{Done("build", "success", T0.Add(2*time.Hour)), Going("test")}}
	f.PRs[2] = &PR{Number: 2, Title: "Fix typo", State: "closed", Author: "octocat", Merged: true, MergedAt: T0.Add(2 * time.Hour),
		ClosedAt: T0.Add(2 * time.Hour), UpdatedAt: T0.Add(2 * time.Hour), Head: "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d", Diff: "x"}
	f.PRs[1] = &PR{Number: 1, Title: "Old", State: "closed", Author: "gavel-agent[bot]", ClosedAt: T0.Add(-72 * time.Hour),
		UpdatedAt: T0.Add(-72 * time.Hour), Head: "1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e", Diff: "y"}
}

// PullRequestEvent is a pull_request webhook payload in GitHub's shape
// (the pull request object of pull_request.json, as the closed example
// payload carries it) for a pull request of the fake's repository.
func (f *Fake) PullRequestEvent(action string, pr *PR) []byte {
	f.mu.Lock()
	o := f.prObject(pr)
	f.mu.Unlock()
	b, err := json.Marshal(map[string]any{"action": action, "number": pr.Number, "pull_request": o,
		"repository": map[string]any{"id": 186853002, "name": f.Repo, "full_name": f.Owner + "/" + f.Repo,
			"owner": map[string]any{"login": f.Owner}, "default_branch": "master"},
		"sender": map[string]any{"login": pr.Author}})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// CheckSuiteEvent is a check_suite "completed" payload
// (webhook_check_suite_completed.json) with a conclusion, for a head of a
// pull request.
func (f *Fake) CheckSuiteEvent(conclusion, head string, number int) []byte {
	o := loadJSON(f.t, "webhook_check_suite_completed.json")
	cs := o["check_suite"].(map[string]any)
	cs["conclusion"], cs["head_sha"], cs["after"] = conclusion, head, head
	pr := cs["pull_requests"].([]any)[0].(map[string]any)
	pr["number"] = number
	pr["head"].(map[string]any)["sha"] = head
	b, err := json.Marshal(o)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// Sign is the X-Hub-Signature-256 GitHub sends with a payload.
func Sign(secret string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
