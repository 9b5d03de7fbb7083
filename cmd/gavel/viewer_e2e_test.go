package main_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// startViewer runs 'gavel view' on a free loopback port and returns its
// address.
func startViewer(t *testing.T, db string) string {
	t.Helper()
	cmd := exec.Command(gavelBin, "--db", db, "view", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "GAVEL_DB=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/ui/runs`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return "http://" + m[1]
		}
	}
	t.Fatalf("gavel view never said where it listens")
	return ""
}

// The viewer in a real browser: runs -> a calibration -> an accepted edit
// -> the record it came from; runs -> an eval -> its false fails -> a
// record showing the judge's reasoning; a record whose id holds #, / and
// ? opens from its link. No page is wider than 1280 px.
func TestViewerInABrowser(t *testing.T) {
	chrome := browser(t)
	shots := os.Getenv("GAVEL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	dir := t.TempDir()
	db := simStore(t, dir, 120)
	odd := filepath.Join(dir, "odd.jsonl")
	os.WriteFile(odd, []byte(`{"id":"acme/web#36@s36?x=1","task":"Fix the build","candidate":"--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n","outcome":{"status":"passed"}}`+"\n"), 0o644)
	mustGavel(t, db, "ingest", odd)
	mustGavel(t, db, "split", "all", "--train", "0", "--val", "0", "--test", "1", "--allow-small")
	mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "1", "--resamples", "100")
	mustGavel(t, db, "eval", "--judge", "passfail", "--split", "all:test", "--model", "sim", "--sim-on-real", "--resamples", "100")
	cal, ev := lastRun(t, db, "calibrate"), lastRun(t, db, "eval")
	var ff runRecordsJSON
	decodeJSON(t, mustGavel(t, db, "runs", "records", ev.ID, "--false-fail", "--json"), &ff)
	if len(ff.Records) == 0 {
		t.Fatal("the eval has no false fail to open")
	}
	url := startViewer(t, db)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	text := func() string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(name string) {
		t.Helper()
		problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](pageProblems))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", name, p)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil || len(png) < 1000 {
			t.Fatalf("%s: screenshot: %v", name, err)
		}
		os.WriteFile(filepath.Join(shots, "view-"+name+".png"), png, 0o644)
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	heading := func() string {
		t.Helper()
		h, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// Runs, a calibration, an accepted edit, the record it came from.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url+"/ui/runs"), chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatal(err)
	}
	check("runs")
	click(fmt.Sprintf(`a[href="/ui/runs/%s"]`, cal.ID))
	if p := text(); !strings.Contains(p, "Calibration: versions and their edits") || !strings.Contains(p, "proposed by") {
		t.Fatalf("the calibration's page shows no edits:\n%s", p)
	}
	check("calibration")
	src, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("a.source")))
	if err != nil {
		t.Fatal(err)
	}
	click("a.source")
	if h := heading(); h != "Record "+src {
		t.Fatalf("the edit's source opens %q, want the record %s", h, src)
	}
	if p := text(); !strings.Contains(p, "train: teacher") || !strings.Contains(p, "The judge's verdicts") {
		t.Fatalf("the source record's page:\n%s", p)
	}
	check("record-from-edit")

	// Runs, an eval, its false fails, a record with the judge's reasoning.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/ui/runs"), chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatal(err)
	}
	click(fmt.Sprintf(`a[href="/ui/runs/%s"]`, ev.ID))
	click(`a.select[href*="which=false_fail"]`)
	check("false-fails")
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("a.record")))
	if err != nil {
		t.Fatal(err)
	}
	var reasoning string
	for _, r := range ff.Records {
		if r.ID == first {
			reasoning = r.Reasoning
		}
	}
	if reasoning == "" {
		t.Fatalf("the page's first false fail %q is not one of the run's", first)
	}
	click("a.record")
	if p := text(); heading() != "Record "+first || !strings.Contains(p, strings.TrimSpace(reasoning)) {
		t.Fatalf("the false fail's page lacks the reasoning %q:\n%s", reasoning, p)
	}
	check("record")

	// An id with #, / and ? opens from its link.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/ui/runs/"+ev.ID+"?q=acme"), chromedp.WaitVisible(chromedp.CSS("a.record"))); err != nil {
		t.Fatal(err)
	}
	click("a.record")
	if h := heading(); h != "Record acme/web#36@s36?x=1" {
		t.Fatalf("the odd id opens %q", h)
	}
	check("odd-id")
}
