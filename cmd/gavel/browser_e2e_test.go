package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gavelhq/gavel/internal/browsertest"
)

// browser finds a Chromium to drive.
func browser(t *testing.T) string { return browsertest.Chromium(t) }

// pageProblems is what a report must not have at 1280 px: a page wider
// than the window, a chart without text, or chart text outside its chart.
const pageProblems = `(() => {
  const out = [];
  const de = document.documentElement;
  if (de.scrollWidth > window.innerWidth) out.push("the page is " + de.scrollWidth + " px wide in a " + window.innerWidth + " px window");
  for (const svg of document.querySelectorAll("svg")) {
    const name = svg.getAttribute("aria-label") || "a chart";
    const texts = svg.querySelectorAll("text");
    if (texts.length === 0) out.push(name + " has no text");
    const vb = svg.viewBox.baseVal;
    for (const t of texts) {
      const b = t.getBBox();
      if (b.x < vb.x - 1 || b.y < vb.y - 1 || b.x + b.width > vb.x + vb.width + 1 || b.y + b.height > vb.y + vb.height + 1) {
        out.push(name + ": the text \"" + t.textContent + "\" is cut off");
      }
    }
  }
  return out;
})()`

// Every kind of report, opened in headless Chromium at 1280 px: no
// horizontal overflow, every chart has its text and none of it is cut
// off; a screenshot of each is kept (GAVEL_SCREENSHOTS names a folder for
// them).
func TestReportsInABrowser(t *testing.T) {
	chrome := browser(t)
	dir := t.TempDir()
	shots := os.Getenv("GAVEL_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	demo := filepath.Join(dir, "demo")
	mustGavel(t, filepath.Join(dir, "unused.db"), "demo", "--out", demo, "--resamples", "200")
	db := filepath.Join(demo, "gavel.db")
	pages := map[string]string{"calibration": filepath.Join(demo, "report.html")}
	// Repeated runs with a teacher panel and the label-blind check.
	pages["calibration repeats"] = filepath.Join(dir, "repeats.html")
	mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--repeats", "3", "--max-iter", "2",
		"--teacher-model", "sim:family=a,sim:family=b,teacher-error=0.05,sim:family=c,sycophant=0.6", "--teacher-quorum", "majority",
		"--label-blind", "--resamples", "200", "--report", pages["calibration repeats"])
	// The framing search, the retest and the blind teacher's reference point.
	pages["calibration starts"] = filepath.Join(dir, "starts.html")
	mustGavel(t, db, "calibrate", "--start", "passfail,predict", "--split", "main", "--model", "sim:judge-noise=0.1", "--max-iter", "2",
		"--label-blind", "--retest", "60", "--resamples", "200", "--report", pages["calibration starts"])
	pages["eval"] = filepath.Join(dir, "eval.html")
	mustGavel(t, db, "eval", "--judge", "rubric5", "--split", "main:test", "--model", "sim", "--resamples", "200",
		"--tune-threshold-on", "main:train", "--compare", "passfail", "--retest", "40", "--report", pages["eval"])
	if _, err := exec.LookPath("python3"); err == nil {
		bdb := filepath.Join(dir, "bench.db")
		bench := filepath.Join(dir, "bench.jsonl")
		mustGavel(t, bdb, "bench", "build", "--problems", "../../examples/humaneval/HumanEval.jsonl.gz", "--lang", "python",
			"--limit", "4", "--per-score", "1", "--seed", "2", "--program-timeout", "5s", "-o", bench)
		pages["bench"] = filepath.Join(dir, "bench.html")
		mustGavel(t, bdb, "bench", "run", "--bench", bench, "--judge", "passfail", "--model", "sim", "--resamples", "200", "--report", pages["bench"])
		adb := filepath.Join(dir, "acr.db")
		pages["acr round"] = filepath.Join(dir, "acr.html")
		mustGavel(t, adb, "acr", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "6", "--n", "3",
			"--model", "sim", "-o", filepath.Join(dir, "round1.jsonl"), "--report", pages["acr round"])
		pages["acr check"] = filepath.Join(dir, "check.html")
		mustGavel(t, adb, "acr", "check", "--instructions", humanEvalFile, "--format", "humaneval", "--limit", "6", "--n", "3",
			"--model", "sim", "--resamples", "200", "--report", pages["acr check"])
	} else if os.Getenv("CI") == "true" {
		t.Fatal("python3 is needed for the bench and ACR reports")
	}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for kind, page := range pages {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+page)); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](pageProblems))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for _, p := range problems {
			t.Errorf("%s report (%s): %s", kind, page, p)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil || len(png) < 1000 {
			t.Fatalf("%s: screenshot: %v (%d bytes)", kind, err, len(png))
		}
		name := filepath.Join(shots, strings.ReplaceAll(kind, " ", "-")+".png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", kind, name)
	}
}
