package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/internal/githubtest"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/server"
)

const hookSecret = "It's a Secret to Everybody"

// hook posts a webhook delivery as GitHub does.
func (e *env) hook(event, delivery string, payload []byte, signature string) answer {
	e.t.Helper()
	h := http.Header{}
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-GitHub-Hook-ID", "292430182")
	if signature != "" {
		h.Set("X-Hub-Signature-256", signature)
	}
	return e.send("POST", "/v1/hooks/github", string(payload), h)
}

func hookResult(t *testing.T, a answer) server.HookResult {
	t.Helper()
	if a.code != http.StatusOK {
		t.Fatalf("status %d: %s", a.code, a.raw)
	}
	var r server.HookResult
	if err := json.Unmarshal([]byte(a.raw), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// GitHub's documented example of a webhook signature: secret "It's a
// Secret to Everybody", payload "Hello, World!", signature
// sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17.
// The service accepts it (a ping, which it reads no further).
func TestWebhookSignatureOfGitHubsExample(t *testing.T) {
	const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := githubtest.Sign(hookSecret, []byte("Hello, World!")); got != want {
		t.Fatalf("sign: %s", got)
	}
	e := start(t, server.Config{Simulated: true, GitHubWebhookSecret: []byte(hookSecret)}, simService)
	r := hookResult(t, e.hook("ping", "d-ping", []byte("Hello, World!"), want))
	if r.Event != "ping" || r.Ignored == "" {
		t.Fatalf("%+v", r)
	}
	// One byte of the payload changed: refused.
	if a := e.hook("ping", "d-ping-2", []byte("Hello, World?"), want); a.code != http.StatusUnauthorized {
		t.Fatalf("altered payload: %d %s", a.code, a.raw)
	}
}

// The webhook's contract: a signed merged-PR event records landed on the
// judged change; a bad or missing signature is 401 and stores nothing; a
// replayed delivery stores nothing new; a failed check suite records a
// failed tests outcome; a PR closed, reopened and merged keeps each
// outcome as a version.
func TestGitHubWebhook(t *testing.T) {
	f, _ := githubtest.New(t)
	e := start(t, server.Config{Simulated: true, Rate: -1, GitHubWebhookSecret: []byte(hookSecret)}, simService)
	pr := &githubtest.PR{Number: 2, Title: "Update the README with new information.", Body: "This is a pretty simple change.",
		State: "closed", Author: "gavel-agent[bot]", Head: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		Merged: true, MergedAt: githubtest.T0, ClosedAt: githubtest.T0, UpdatedAt: githubtest.T0}
	// The change the service judged, named as the pull request.
	judged := jsonBody(map[string]any{"judge": "passfail", "change_id": "Codertocat/Hello-World#2", "group": "Codertocat/Hello-World",
		"inputs": map[string]any{"task": "Update the README", "candidate": "diff --git a/README.md b/README.md\n+Hello\n",
			"context": map[string]string{"head_sha": pr.Head}}})
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judged); a.code != 200 {
		t.Fatalf("judge: %s", a.raw)
	}
	merged := f.PullRequestEvent("closed", pr)

	// Bad and missing signatures: 401, nothing stored.
	before := e.counts()
	if a := e.hook("pull_request", "d-1", merged, githubtest.Sign("another secret", merged)); a.code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d %s", a.code, a.raw)
	}
	if a := e.hook("pull_request", "d-1", merged, ""); a.code != http.StatusUnauthorized {
		t.Fatalf("no signature: %d %s", a.code, a.raw)
	}
	if after := e.counts(); !equalCounts(before, after) {
		t.Fatalf("a refused delivery stored something: %v -> %v", before, after)
	}

	// Signed: landed, on the judged change's record.
	r := hookResult(t, e.hook("pull_request", "d-1", merged, githubtest.Sign(hookSecret, merged)))
	if len(r.Outcomes) != 1 || r.Outcomes[0] != (server.HookOutcome{RecordID: "Codertocat/Hello-World#2", Status: record.StatusLanded,
		Version: 1, Created: true, Judged: true}) {
		t.Fatalf("merged: %+v", r)
	}
	rec := e.record("Codertocat/Hello-World#2")
	if rec == nil || rec.Outcome.Status != record.StatusLanded || rec.Outcome.Label != record.Pass || !rec.Outcome.At.Equal(githubtest.T0) ||
		rec.Candidate != "diff --git a/README.md b/README.md\n+Hello\n" {
		t.Fatalf("record %+v", rec)
	}

	// The same delivery again: the first answer, nothing new.
	before = e.counts()
	again := hookResult(t, e.hook("pull_request", "d-1", merged, githubtest.Sign(hookSecret, merged)))
	if !again.Replay || len(again.Outcomes) != 1 || !again.Outcomes[0].Created {
		t.Fatalf("replay: %+v", again)
	}
	if after := e.counts(); !equalCounts(before, after) {
		t.Fatalf("a replay stored something: %v -> %v", before, after)
	}
	// A new delivery of the same news: no new version.
	if r := hookResult(t, e.hook("pull_request", "d-1b", merged, githubtest.Sign(hookSecret, merged))); r.Outcomes[0].Created || r.Outcomes[0].Version != 1 {
		t.Fatalf("same outcome again: %+v", r)
	}

	// A failed check suite on the head: a tests outcome, failed.
	suite := f.CheckSuiteEvent("failure", pr.Head, 2)
	r = hookResult(t, e.hook("check_suite", "d-2", suite, githubtest.Sign(hookSecret, suite)))
	if len(r.Outcomes) != 1 || r.Outcomes[0].RecordID != "Codertocat/Hello-World#2/tests" || r.Outcomes[0].Status != record.StatusFailed {
		t.Fatalf("check suite: %+v", r)
	}
	if tr := e.record("Codertocat/Hello-World#2/tests"); tr == nil || tr.Outcome.Label != record.Fail || tr.Outcome.Source != record.SourceTests ||
		tr.Group != "Codertocat/Hello-World" {
		t.Fatalf("tests record %+v", tr)
	}
	// Checks of a head the pull request has left: nothing.
	old := f.CheckSuiteEvent("success", "0000000000000000000000000000000000000000", 2)
	if r := hookResult(t, e.hook("check_suite", "d-3", old, githubtest.Sign(hookSecret, old))); len(r.Outcomes) != 0 || r.Ignored == "" {
		t.Fatalf("old head: %+v", r)
	}

	// Reopened (a draft again), then merged: each a version.
	reopened := f.PullRequestEvent("reopened", pr)
	if r := hookResult(t, e.hook("pull_request", "d-4", reopened, githubtest.Sign(hookSecret, reopened))); r.Outcomes[0].Version != 2 ||
		r.Outcomes[0].Status != record.StatusDraft {
		t.Fatalf("reopened: %+v", r)
	}
	pr.MergedAt = githubtest.T0.Add(time.Hour)
	merged = f.PullRequestEvent("closed", pr)
	if r := hookResult(t, e.hook("pull_request", "d-5", merged, githubtest.Sign(hookSecret, merged))); r.Outcomes[0].Version != 3 {
		t.Fatalf("merged again: %+v", r)
	}
	hist, err := e.db.Outcomes(context.Background(), "Codertocat/Hello-World#2")
	if err != nil || len(hist) != 3 || hist[1].Origin != "github webhook d-4" {
		t.Fatalf("history %+v %v", hist, err)
	}
	// An older event sent again under a new delivery id (an earlier close,
	// unmerged): acknowledged as stale; the landed outcome stands.
	stalePR := *pr
	stalePR.Merged, stalePR.MergedAt, stalePR.ClosedAt = false, time.Time{}, githubtest.T0.Add(-time.Hour)
	closedEarlier := f.PullRequestEvent("closed", &stalePR)
	before = e.counts()
	r = hookResult(t, e.hook("pull_request", "d-1-replayed", closedEarlier, githubtest.Sign(hookSecret, closedEarlier)))
	if !r.Stale || len(r.Outcomes) != 0 || !strings.Contains(r.Ignored, "stale") {
		t.Fatalf("stale event: %+v", r)
	}
	if rec := e.record("Codertocat/Hello-World#2"); rec.Outcome.Status != record.StatusLanded {
		t.Fatalf("a stale event changed the outcome to %s", rec.Outcome.Status)
	}
	after := e.counts()
	if after["record_outcomes"] != before["record_outcomes"] || after["records"] != before["records"] || after["webhook_deliveries"] != before["webhook_deliveries"]+1 {
		t.Fatalf("a stale event: %v -> %v", before, after)
	}
	if m := e.do("GET", "/metrics", "", ""); !strings.Contains(m.raw, `gavel_webhook_deliveries_total{result="stale",source="github"} 1`) {
		t.Errorf("metrics do not count the stale delivery:\n%s", m.raw)
	}

	// The change id the Actions example gives, OWNER/NAME#NUMBER@SHA: the
	// event finds it by the pull request's head.
	pr7 := &githubtest.PR{Number: 7, State: "closed", Author: "gavel-agent[bot]", Head: strings.Repeat("7a", 20), ClosedAt: githubtest.T0}
	id7 := "Codertocat/Hello-World#7@" + pr7.Head
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], jsonBody(map[string]any{"judge": "passfail", "change_id": id7,
		"inputs": map[string]any{"task": "t", "candidate": "c"}})); a.code != 200 {
		t.Fatalf("judge: %s", a.raw)
	}
	closed7 := f.PullRequestEvent("closed", pr7)
	if r := hookResult(t, e.hook("pull_request", "d-8", closed7, githubtest.Sign(hookSecret, closed7))); len(r.Outcomes) != 1 ||
		r.Outcomes[0].RecordID != id7 || r.Outcomes[0].Status != record.StatusAbandoned {
		t.Fatalf("by head: %+v", r)
	}
	if rec := e.record(id7); rec == nil || rec.Group != id7 {
		t.Fatalf("record %+v", rec)
	}

	// Events gavel does not use are acknowledged and ignored.
	issues := []byte(`{"action":"opened","issue":{"number":1347}}`)
	if r := hookResult(t, e.hook("issues", "d-6", issues, githubtest.Sign(hookSecret, issues))); r.Ignored == "" || len(r.Outcomes) != 0 {
		t.Fatalf("issues event: %+v", r)
	}
	// A pull request the service did not judge, without a GitHub token:
	// acknowledged, nothing recorded.
	other := f.PullRequestEvent("closed", &githubtest.PR{Number: 9, State: "closed", Author: "x", Head: strings.Repeat("9", 40), ClosedAt: githubtest.T0})
	if r := hookResult(t, e.hook("pull_request", "d-7", other, githubtest.Sign(hookSecret, other))); r.Ignored == "" || !strings.Contains(r.Ignored, "GITHUB_TOKEN") {
		t.Fatalf("unjudged: %+v", r)
	}
}

// With a GitHub client, a pull request the service did not judge is
// imported when a webhook reports it: its records and outcomes come from
// the API, as 'gavel import github' would store them.
func TestGitHubWebhookImportsUnjudged(t *testing.T) {
	f, srv := githubtest.New(t)
	githubtest.AgentScenario(f)
	base := srv.URL + "/"
	gh, err := github.NewClient(github.WithURLs(&base, &base), github.WithAuthToken("ghp_test"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, server.Config{Simulated: true, GitHubWebhookSecret: []byte(hookSecret), GitHub: gh}, simService)
	ev := f.PullRequestEvent("closed", f.PRs[5])
	r := hookResult(t, e.hook("pull_request", "d-1", ev, githubtest.Sign(hookSecret, ev)))
	if len(r.Outcomes) != 2 || r.Outcomes[0].RecordID != "Codertocat/Hello-World#5" || r.Outcomes[0].Status != record.StatusLanded ||
		r.Outcomes[1].RecordID != "Codertocat/Hello-World#5/tests" || r.Outcomes[1].Status != record.StatusFailed || r.Outcomes[0].Judged {
		t.Fatalf("%+v", r)
	}
	if rec := e.record("Codertocat/Hello-World#5"); rec == nil || rec.Candidate != githubtest.Diff5 || rec.Group != "Codertocat/Hello-World#1347" {
		t.Fatalf("record %+v", rec)
	}
}

// Without a secret the endpoint is off.
func TestGitHubWebhookOff(t *testing.T) {
	e := start(t, server.Config{Simulated: true}, simService)
	a := e.hook("ping", "d", []byte("{}"), githubtest.Sign("", []byte("{}")))
	if a.code != http.StatusNotFound || !strings.Contains(a.raw, "GAVEL_GITHUB_WEBHOOK_SECRET") {
		t.Fatalf("%d %s", a.code, a.raw)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Signed check_suite and check_run deliveries without their object are a
// 400 that names what is missing (they made the handler panic), and
// nothing is stored.
func TestChecksEventWithoutItsObject(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1, GitHubWebhookSecret: []byte(hookSecret)}, simService)
	before := e.counts()
	for i, event := range []string{"check_suite", "check_run"} {
		payload := []byte(`{"action":"completed","repository":{"full_name":"acme/web"}}`)
		a := e.hook(event, fmt.Sprintf("d-empty-%d", i), payload, githubtest.Sign(hookSecret, payload))
		if a.code != http.StatusBadRequest || !strings.Contains(a.raw, event+" payload without its "+event+" object") {
			t.Fatalf("%s: %d %s", event, a.code, a.raw)
		}
	}
	if after := e.counts(); !equalCounts(before, after) {
		t.Fatalf("a refused delivery changed the store: %v -> %v", before, after)
	}
}

// Unauthenticated webhook bodies cannot fill the memory: one over the
// cap is refused before it is read, and while the readers are busy a new
// delivery gets 503 with Retry-After; nothing is stored.
func TestWebhookBodiesAreBounded(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1, GitHubWebhookSecret: []byte(hookSecret), WebhookBodyLimit: 1 << 20, WebhookReaders: 1}, simService)
	before := e.counts()
	big := strings.Repeat("x", 2<<20)
	if a := e.hook("pull_request", "d-big", []byte(big), "sha256=00"); a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.raw, "over this service's limit") {
		t.Fatalf("over the cap: %d %s", a.code, a.raw)
	}
	// A slow delivery holds the one reader.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", e.url+"/v1/hooks/github", pr)
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "d-slow")
	req.Header.Set("X-Hub-Signature-256", "sha256=00")
	slow := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	pw.Write([]byte(`{"action":`))
	var busy answer
	for range 200 {
		busy = e.hook("pull_request", "d-2", []byte(`{}`), "sha256=00")
		if busy.code == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if busy.code != http.StatusServiceUnavailable || busy.header.Get("Retry-After") == "" {
		t.Fatalf("while the reader is busy: %d %v %s", busy.code, busy.header, busy.raw)
	}
	pw.Write([]byte(`"closed"}`))
	pw.Close()
	if code := <-slow; code != http.StatusUnauthorized {
		t.Fatalf("the slow delivery (a bad signature): %d", code)
	}
	if after := e.counts(); !equalCounts(before, after) {
		t.Fatalf("refused deliveries changed the store: %v -> %v", before, after)
	}
}
