package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/internal/browsertest"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/sim"
)

// browser finds a Chromium to drive.
func browser(t *testing.T) string { return browsertest.Chromium(t) }

// overflow is the width by which a page is wider than its window (0 when
// it fits).
const overflow = `Math.max(0, document.documentElement.scrollWidth - window.innerWidth)`

// Blind review in a real browser: a reviewer logs in with a token, sees a
// change without the judge's verdict or the outcome, records a verdict,
// and the agreement page counts it. The pages fit 1280 px; screenshots go
// to a temporary folder (or GAVEL_SCREENSHOTS).
func TestBlindReviewInABrowser(t *testing.T) {
	chrome := browser(t)
	shots := os.Getenv("GAVEL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 12, Seed: 21})
	reasoning := map[string]string{}
	for i := range rs {
		r := &rs[i]
		a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", r))
		if a.code != 200 {
			t.Fatalf("judge: %s", a.raw)
		}
		reasoning[r.ID] = a.body["reasoning"].(string)
		if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": r.ID, "status": r.Outcome.Status})); a.code != 201 {
			t.Fatalf("outcome: %s", a.raw)
		}
	}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	shot := func(name string) {
		t.Helper()
		if w, err := chromedp.Run(ctx, chromedp.Evaluate[float64](overflow)); err != nil || w > 0 {
			t.Errorf("%s: the page overflows by %v px (%v)", name, w, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil || len(png) < 1000 {
			t.Fatalf("%s: screenshot: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, "serve-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// bodyText is the page's text; while a form's redirect loads the next
	// document there may be no body yet (or no context to evaluate in).
	bodyText := func() (string, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	}
	text := func() string {
		t.Helper()
		s, err := bodyText()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// waitFor waits for the page to say something (after a form's
	// redirect, the old page may still be showing, or none yet).
	waitFor := func(what string) string {
		t.Helper()
		var last string
		var lastErr error
		for range 100 {
			p, err := bodyText()
			if err == nil && strings.Contains(p, what) {
				return p
			}
			last, lastErr = p, err
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("the page never says %q (%v):\n%s", what, lastErr, last)
		return ""
	}
	location := func() string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// Not logged in: the review page sends the browser to log in.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(e.url+"/ui/review"),
		chromedp.WaitVisible(chromedp.CSS("#token"))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(location(), "/ui/login") {
		t.Fatalf("not logged in, at %s", location())
	}
	shot("login")
	// A wrong token is refused on the page.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "gvl_000000000000_nope"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(".error"))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(), "unknown token") {
		t.Fatalf("wrong token: %s", text())
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), e.tok[deploy.ScopeReview]), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#candidate"))); err != nil {
		t.Fatal(err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#change")))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(heading, "Change ")
	var shown *int
	for i := range rs {
		if rs[i].ID == id {
			shown = &i
		}
	}
	if shown == nil {
		t.Fatalf("the page shows change %q", heading)
	}
	page := text()
	r := rs[*shown]
	if !strings.Contains(page, strings.TrimSpace(strings.SplitN(r.Task, "\n", 2)[0])) {
		t.Fatalf("the task is not shown:\n%s", page)
	}
	for _, hidden := range []string{reasoning[r.ID], string(r.Outcome.Status), "abandoned", "landed", "passed", "failed"} {
		if strings.Contains(page, hidden) {
			t.Fatalf("the reviewer sees %q:\n%s", hidden, page)
		}
	}
	shot("review")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#fail")), chromedp.SendKeys(chromedp.CSS("#note"), "drops the error"),
		chromedp.Click(chromedp.CSS("#submit"))); err != nil {
		t.Fatal(err)
	}
	waitFor("You have reviewed 1 changes")
	reviews, err := e.db.Reviews(context.Background())
	if err != nil || len(reviews) != 1 || reviews[0].ChangeID != id || reviews[0].Verdict != "fail" || reviews[0].Note != "drops the error" {
		t.Fatalf("reviews %+v %v", reviews, err)
	}
	// A reviewer cannot browse verdicts.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/ui/verdicts"), chromedp.WaitVisible(chromedp.CSS("#message"))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(), "blind") {
		t.Fatalf("reviewer on the verdicts page:\n%s", text())
	}
	// The agreement page counts the verdict: human against the outcome
	// and against the judge, over one change.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/ui/agreement?judge=passfail"), chromedp.WaitVisible(chromedp.CSS("#pairs"))); err != nil {
		t.Fatal(err)
	}
	table, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#pairs")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "human vs outcome\t1") || !strings.Contains(table, "human vs judge ") {
		t.Fatalf("agreement table:\n%s", table)
	}
	shot("agreement")

	// An admin sees the judge with its drift and the verdicts.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("nav button")), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), e.tok[deploy.ScopeAdmin]), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("table")), chromedp.Navigate(e.url+"/ui/judges/passfail"), chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatal(err)
	}
	if p := text(); !strings.Contains(p, "Audit trail") || !strings.Contains(p, "initial") {
		t.Fatalf("judge page:\n%s", p)
	}
	shot("judge")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/ui/verdicts"), chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatal(err)
	}
	if p := text(); !strings.Contains(p, rs[0].ID) {
		t.Fatalf("verdicts page:\n%s", p)
	}
	shot("verdicts")
	t.Logf("screenshots in %s", shots)
}

// Ids with '#', '?', '/' and spaces review in a browser each on its own
// change: the form posts to the path-escaped id, and c1#pr-2's review
// does not overwrite c1's.
func TestReviewOfOddIDsInABrowser(t *testing.T) {
	chrome := browser(t)
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	ids := []string{"c1", "acme/web#36@0123abcd", "c1#pr-2", "a?b=c", "x/y z", "plain"}
	for i, id := range ids {
		body := jsonBody(map[string]any{"judge": "passfail", "change_id": id,
			"inputs": map[string]any{"task": "Task of " + id, "candidate": "diff --git a/f b/f\n+change " + id + "\n"}})
		if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], body); a.code != 200 {
			t.Fatalf("judge %q: %s", id, a.raw)
		}
		status := []string{"landed", "abandoned"}[i%2]
		if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": id, "status": status})); a.code != 201 {
			t.Fatalf("outcome %q: %s", id, a.raw)
		}
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/ui/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), e.tok[deploy.ScopeReview]), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#candidate"))); err != nil {
		t.Fatal(err)
	}
	chosen := map[string]string{}
	for n := 1; n <= len(ids); n++ {
		heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#change")))
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimPrefix(heading, "Change ")
		if _, dup := chosen[id]; dup {
			t.Fatalf("review %d shows %q again", n, id)
		}
		verdict := []string{"pass", "fail"}[n%2]
		chosen[id] = verdict
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+verdict)), chromedp.Click(chromedp.CSS("#submit"))); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("You have reviewed %d changes", n)
		var page string
		for range 100 {
			page, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			if strings.Contains(page, want) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(page, want) {
			t.Fatalf("after reviewing %q the page says:\n%s", id, page)
		}
	}
	reviews, err := e.db.Reviews(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range reviews {
		got[r.ChangeID] = string(r.Verdict)
	}
	if fmt.Sprint(got) != fmt.Sprint(chosen) || len(got) != len(ids) {
		t.Fatalf("reviews stored %v, chosen %v", got, chosen)
	}
}
