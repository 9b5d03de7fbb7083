package main_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/store/sqlite"
)

// serveProcess starts 'gavel serve' on a free port and returns its URL
// once it says it is listening; the process is stopped with SIGTERM at the
// end of the test and must exit cleanly.
func serveProcess(t *testing.T, db string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gavelBin, append([]string{"--db", db, "serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GAVEL_DB=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	url := make(chan string, 1)
	var rest bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		re := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+)$`)
		for lines.Scan() {
			if m := re.FindStringSubmatch(lines.Text()); m != nil {
				url <- m[1]
				continue
			}
			rest.WriteString(lines.Text() + "\n")
		}
		close(url)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		<-done
		if err != nil {
			t.Errorf("serve did not stop cleanly: %v\n%s", err, rest.String())
		}
	})
	select {
	case u, ok := <-url:
		if !ok {
			t.Fatalf("serve exited before listening")
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not say it was listening within 30 s")
	}
	return ""
}

// A team's CI loop through the CLI: tokens, the service, the gate, the
// outcome, and the change as a record.
func TestServeGateAndOutcome(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	// sim on a service needs asking for.
	if r := gavel(t, db, "serve", "--model", "sim"); r.code != 2 || !strings.Contains(r.stderr, "--sim-on-real") {
		t.Fatalf("serve with sim: %+v", r)
	}
	if r := gavel(t, db, "token", "create"); r.code != 2 || !strings.Contains(r.stderr, "--scope") {
		t.Fatalf("token without scope: %+v", r)
	}
	judgeTok := mustGavel(t, db, "token", "create", "--scope", "judge", "--name", "ci")
	feedbackTok := mustGavel(t, db, "token", "create", "--scope", "feedback")
	for _, tok := range []string{judgeTok, feedbackTok} {
		if !regexp.MustCompile(`^gvl_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$`).MatchString(tok) {
			t.Fatalf("token create printed %q, want the token alone", tok)
		}
	}
	list := mustGavel(t, db, "token", "list")
	if !strings.Contains(list, "judge") || !strings.Contains(list, "ci") || strings.Contains(list, strings.TrimSpace(judgeTok)) {
		t.Fatalf("token list:\n%s", list)
	}
	url := serveProcess(t, db, "--model", "sim", "--sim-on-real")
	task := filepath.Join(dir, "task.txt")
	diff := filepath.Join(dir, "change.diff")
	os.WriteFile(task, []byte("Close the file on every path of Load.\n"), 0o644)
	os.WriteFile(diff, []byte("--- a/load.go\n+++ b/load.go\n@@ -3,3 +3,4 @@\n f, err := os.Open(p)\n+defer f.Close()\n"), 0o644)
	gate := func(tok string, args ...string) result {
		cmd := exec.Command(gavelBin, append([]string{"gate", "--server", url, "--judge", "passfail", "--change-id", "acme/app#42",
			"--task", task, "--candidate", diff}, args...)...)
		cmd.Env = append(os.Environ(), "GAVEL_TOKEN="+strings.TrimSpace(tok), "GAVEL_SERVER=")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{out.String(), errb.String(), code}
	}
	r := gate(judgeTok)
	if r.code != 0 && r.code != 1 || !strings.Contains(r.stdout, "acme/app#42: ") {
		t.Fatalf("gate: %+v", r)
	}
	verdict := "PASS"
	if r.code == 1 {
		verdict = "FAIL"
	}
	if !strings.Contains(r.stdout, verdict+" (judge passfail") {
		t.Fatalf("gate exit %d but says:\n%s", r.code, r.stdout)
	}
	// The same gate again gives the same answer.
	if again := gate(judgeTok); again.code != r.code {
		t.Fatalf("gate again: %+v", again)
	}
	// A feedback token cannot gate: no verdict (exit 4), not a failed change.
	if r := gate(feedbackTok); r.code != 4 || !strings.Contains(r.stderr, "403") {
		t.Fatalf("gate with a feedback token: %+v", r)
	}
	report := exec.Command(gavelBin, "report-outcome", "--server", url, "--change-id", "acme/app#42", "--status", "landed")
	report.Env = append(os.Environ(), "GAVEL_TOKEN="+strings.TrimSpace(feedbackTok))
	out, err := report.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "acme/app#42: outcome landed (pass) recorded as record acme/app#42") {
		t.Fatalf("report-outcome: %v\n%s", err, out)
	}
	if l := mustGavel(t, db, "records", "list"); !strings.Contains(l, "acme/app#42") {
		t.Fatalf("records list lacks the change:\n%s", l)
	}
	// A blind review of the change (as the review page records it), then
	// the agreement of human, judge and outcome from the command line.
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	err = st.SaveReview(context.Background(), &deploy.Review{ChangeID: "acme/app#42", Reviewer: "ann", Verdict: record.Pass})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ag struct {
		Reviewed int `json:"reviewed_changes"`
		Pairs    []struct {
			Raters []string `json:"raters"`
			N      int      `json:"n"`
		} `json:"pairs"`
	}
	decodeJSON(t, mustGavel(t, db, "agreement", "--reviews", "--judge", "passfail", "--model", "sim", "--resamples", "100", "--json"), &ag)
	if ag.Reviewed != 1 || len(ag.Pairs) != 3 || strings.Join(ag.Pairs[0].Raters, " ") != "human outcome" || ag.Pairs[0].N != 1 || ag.Pairs[1].N != 1 {
		t.Fatalf("agreement --reviews: %+v", ag)
	}
	if r := gavel(t, db, "agreement", "--reviews"); r.code != 2 || !strings.Contains(r.stderr, "--model") {
		t.Fatalf("agreement --reviews without a model: %+v", r)
	}
}

// promote through the CLI: the calibration's own starting prompt has no
// gain and is refused (exit 1, with the interval); the calibrated version
// is promoted; rollback goes back. (World 1: one whose calibration selects
// a version, as most do; the demo's world 3 keeps the original.)
func TestPromoteCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	recs := filepath.Join(dir, "sim.jsonl")
	mustGavel(t, db, "sim", "records", "--n", "1200", "--seed", "1", "-o", recs)
	mustGavel(t, db, "ingest", recs)
	mustGavel(t, db, "split", "main", "--exclude-status", "draft")
	var cal struct {
		Judges []struct {
			Selected string `json:"selected_version"`
		} `json:"judges"`
	}
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--resamples", "300", "--json"), &cal)
	builtin, _ := judge.Load("passfail")
	orig, selected := builtin.Version(), cal.Judges[0].Selected
	if selected == orig {
		t.Fatal("the calibration kept its original prompt")
	}
	// The calibration's original against itself: gain 0, refused.
	r := gavel(t, db, "promote", "passfail", orig[:12], "--model", "sim", "--resamples", "300")
	if r.code != 1 || !strings.Contains(r.stderr, "refused") || !strings.Contains(r.stderr, "+0.000 [+0.000, +0.000]") {
		t.Fatalf("promote the original: %+v", r)
	}
	if r := gavel(t, db, "promote", "passfail", selected[:12], "--model", "sim", "--force"); r.code != 2 || !strings.Contains(r.stderr, "--reason") {
		t.Fatalf("force without a reason: %+v", r)
	}
	var p struct {
		Promoted   bool `json:"promoted"`
		Activation struct {
			Version, Action string
		} `json:"activation"`
		Evidence struct {
			Gain struct {
				Value float64 `json:"value"`
				CI    struct{ Lo, Hi float64 }
			} `json:"gain_scott_pi"`
		} `json:"evidence"`
	}
	decodeJSON(t, mustGavel(t, db, "promote", "passfail", selected[:12], "--model", "sim", "--resamples", "300", "--json"), &p)
	if !p.Promoted || p.Activation.Version != selected || p.Activation.Action != "promote" || p.Evidence.Gain.CI.Lo <= 0 {
		t.Fatalf("promote the calibrated version: %+v", p)
	}
	// Past the first promotion, rollback returns to the built-in prompt.
	var rb struct {
		Activation struct{ Version, Previous, Action string } `json:"activation"`
	}
	decodeJSON(t, mustGavel(t, db, "rollback", "passfail", "--json"), &rb)
	if rb.Activation.Version != orig || rb.Activation.Previous != selected || rb.Activation.Action != "rollback" {
		t.Fatalf("rollback past the first promotion: %+v", rb)
	}
	if r := gavel(t, db, "rollback", "nosuchjudge"); r.code != 2 {
		t.Fatalf("rollback of a judge never activated: %+v", r)
	}
}
