package codehost_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub serves the parts of GitHub's REST API an import reads, with
// bodies in GitHub's documented shapes (testdata/github), pagination by
// Link headers, rate-limit headers on every answer, ETags with 304 Not
// Modified, and a primary rate limit that can be made to run out once.
type fakeGitHub struct {
	t        *testing.T
	mu       sync.Mutex
	owner    string
	repo     string
	prs      map[int]*fakePR
	issues   map[int][2]string // title, body
	pageSize int
	// limitOnce names a path prefix whose next request is refused as over
	// the rate limit, with the reset a second ahead.
	limitOnce string
	seen      []seenRequest

	prJSON, runJSON, issueJSON, commentJSON, limitedJSON map[string]any
}

type fakePR struct {
	Number                        int
	Title, Body, State, Author    string
	Merged                        bool
	MergedAt, ClosedAt, UpdatedAt time.Time
	Head, Diff                    string
	Labels                        []string
	Runs                          []fakeRun
	Comments                      []fakeComment
}

type fakeRun struct {
	Name, Status, Conclusion string
	CompletedAt              time.Time
}

type fakeComment struct {
	Body string
	At   time.Time
}

type seenRequest struct {
	Path, IfNoneMatch string
	Status            int
}

func loadJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/github/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func newFakeGitHub(t *testing.T) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, owner: "Codertocat", repo: "Hello-World", prs: map[int]*fakePR{}, issues: map[int][2]string{}, pageSize: 2,
		prJSON: loadJSON(t, "pull_request.json"), runJSON: loadJSON(t, "check_run.json"), issueJSON: loadJSON(t, "issue.json"),
		commentJSON: loadJSON(t, "issue_comment.json"), limitedJSON: loadJSON(t, "rate_limited.json")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", f.list)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", f.pull)
	mux.HandleFunc("GET /repos/{owner}/{repo}/commits/{sha}/check-runs", f.checkRuns)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}", f.issue)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/comments", f.comments)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		if f.limitOnce != "" && strings.HasPrefix(r.URL.Path, f.limitOnce) {
			f.limitOnce = ""
			f.rateHeaders(w, 0, time.Now().Add(time.Second))
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(f.limitedJSON)
			f.seen = append(f.seen, seenRequest{r.URL.Path, r.Header.Get("If-None-Match"), 403})
			return
		}
		f.rateHeaders(w, 4999, time.Now().Add(time.Hour))
		mux.ServeHTTP(rec, r)
		f.seen = append(f.seen, seenRequest{r.URL.Path, r.Header.Get("If-None-Match"), rec.status})
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

func (f *fakeGitHub) rateHeaders(w http.ResponseWriter, remaining int, reset time.Time) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// reply writes a body with an ETag, or 304 when the client has it.
func (f *fakeGitHub) reply(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
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

func (f *fakeGitHub) replyJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Error(err)
	}
	f.reply(w, r, "application/json; charset=utf-8", b)
}

func (f *fakeGitHub) notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)
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

func (f *fakeGitHub) prObject(pr *fakePR) map[string]any {
	o := clone(f.prJSON)
	api := fmt.Sprintf("https://api.github.com/repos/%s/%s", f.owner, f.repo)
	o["number"] = pr.Number
	o["id"] = 279147437 + pr.Number
	o["url"] = fmt.Sprintf("%s/pulls/%d", api, pr.Number)
	o["html_url"] = fmt.Sprintf("https://github.com/%s/%s/pull/%d", f.owner, f.repo, pr.Number)
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
func (f *fakeGitHub) sorted() []*fakePR {
	var out []*fakePR
	for _, pr := range f.prs {
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out
}

func (f *fakeGitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("state") != "all" || q.Get("sort") != "updated" || q.Get("direction") != "desc" {
		f.t.Errorf("list with %s", r.URL.RawQuery)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	all := f.sorted()
	last := max(1, (len(all)+f.pageSize-1)/f.pageSize)
	var items []any
	for i := (page - 1) * f.pageSize; i < min(len(all), page*f.pageSize); i++ {
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

func (f *fakeGitHub) pr(w http.ResponseWriter, r *http.Request) *fakePR {
	n, _ := strconv.Atoi(r.PathValue("n"))
	pr := f.prs[n]
	if pr == nil {
		f.notFound(w)
	}
	return pr
}

func (f *fakeGitHub) pull(w http.ResponseWriter, r *http.Request) {
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

func (f *fakeGitHub) checkRuns(w http.ResponseWriter, r *http.Request) {
	var runs []any
	for _, pr := range f.prs {
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

func (f *fakeGitHub) issue(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	is, ok := f.issues[n]
	if !ok {
		f.notFound(w)
		return
	}
	o := clone(f.issueJSON)
	o["number"], o["title"], o["body"] = n, is[0], is[1]
	f.replyJSON(w, r, o)
}

func (f *fakeGitHub) comments(w http.ResponseWriter, r *http.Request) {
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

// requests returns and forgets the requests seen so far.
func (f *fakeGitHub) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.seen
	f.seen = nil
	return out
}
