package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
)

// The live batch APIs through the CLI, against fakes of OpenAI's Files
// and Batches and of Anthropic's Message Batches: an offline run leaves
// its requests pending; submit sends them once; a batch that expires
// half-done brings half the answers, and the rest stay pending for the
// next batch; then the run finishes from the cache without a call.
func TestLiveBatches(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			var fake *llmtest.Server
			base := ""
			if provider == "openai" {
				fake = llmtest.NewOpenAI()
				base = fake.URL + "/v1"
			} else {
				fake = llmtest.NewAnthropic()
				base = fake.URL
				t.Setenv("ANTHROPIC_API_KEY", "test-key") // the fake takes any key; the SDK wants one
			}
			defer fake.Close()
			fake.Batches.Options.Answer = func(c *llmtest.Call) string {
				return `{"reasoning": "Fine.", "verdict": "pass"}`
			}
			db := simStore(t, filepath.Join(t.TempDir(), "w"), 60)
			judgeArgs := []string{"judge", "--judge", "passfail", "--split", "main:test", "--model", provider + ":m", "--base-url", base, "--json"}
			r := gavel(t, db, append(judgeArgs, "--offline")...)
			if r.code != 3 {
				t.Fatalf("offline run: %+v", r)
			}
			var plan dryRunJSON
			decodeJSON(t, mustGavel(t, db, "judge", "--judge", "passfail", "--split", "main:test", "--model", provider+":m", "--dry-run", "--json"), &plan)
			n := plan.Total.ToSend
			fake.Batches.ExpireAfter = n / 2
			var sub struct {
				Submitted struct {
					ID       string `json:"id"`
					Requests int    `json:"requests"`
				} `json:"submitted"`
			}
			decodeJSON(t, mustGavel(t, db, "batch", "submit", "--provider", provider, "--base-url", base, "--json"), &sub)
			if sub.Submitted.ID == "" || sub.Submitted.Requests != n {
				t.Fatalf("submit: %+v, want %d requests", sub, n)
			}
			// Nothing is sent twice while the batch runs.
			if r := gavel(t, db, "batch", "submit", "--provider", provider, "--base-url", base); r.code != 0 || !strings.Contains(r.stderr, "nothing to submit") || fake.Batches.Submitted() != 1 {
				t.Fatalf("second submit: %+v (%d batches)", r, fake.Batches.Submitted())
			}
			if s := mustGavel(t, db, "batch", "status", "--base-url", base); !strings.Contains(s, sub.Submitted.ID) {
				t.Fatalf("status:\n%s", s)
			}
			var col struct {
				Collected []struct {
					Status string `json:"status"`
					Import struct {
						Imported, Failed int
					} `json:"import"`
				} `json:"collected"`
				Pending int `json:"pending"`
			}
			decodeJSON(t, mustGavel(t, db, "batch", "collect", "--base-url", base, "--json"), &col)
			wantStatus := map[string]string{"openai": "expired", "anthropic": "ended"}[provider]
			if len(col.Collected) != 1 || col.Collected[0].Status != wantStatus || col.Collected[0].Import.Imported != n/2 ||
				col.Collected[0].Import.Failed != n-n/2 || col.Pending != n-n/2 {
				t.Fatalf("collect of the half-expired batch: %+v (n=%d)", col, n)
			}
			// The rest go in a second batch, which completes.
			fake.Batches.ExpireAfter = 0
			decodeJSON(t, mustGavel(t, db, "batch", "submit", "--provider", provider, "--base-url", base, "--json"), &sub)
			if sub.Submitted.Requests != n-n/2 {
				t.Fatalf("resubmit: %+v", sub)
			}
			mustGavel(t, db, "batch", "status", "--base-url", base)
			decodeJSON(t, mustGavel(t, db, "batch", "collect", "--base-url", base, "--json"), &col)
			if col.Pending != 0 || col.Collected[0].Import.Imported != n-n/2 {
				t.Fatalf("second collect: %+v", col)
			}
			// The run finishes from the cache: no call to the provider.
			var run judgeJSON
			decodeJSON(t, mustGavel(t, db, judgeArgs...), &run)
			// Records with the same inputs share one request (the plan's repeats).
			if m := plan.Total.Calls; run.Records != m || run.Pass != m || m != n+plan.Total.Repeats || fake.Count() != 0 {
				t.Fatalf("final run: %+v, %d direct calls", run, fake.Count())
			}
		})
	}
}

type judgeJSON struct {
	Records int `json:"records"`
	Pass    int `json:"pass"`
}

// calibrate --batch runs every stage through the batch API: nothing is
// sent directly, each stage is a batch, and the calibration finishes.
func TestCalibrateThroughBatches(t *testing.T) {
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	fake.Batches.Options.Answer = simAnswer(t)
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 120)
	r := gavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge", "--base-url", fake.URL+"/v1",
		"--max-iter", "2", "--resamples", "200", "--batch", "--batch-poll", "10ms", "--json")
	if r.code != 0 {
		t.Fatalf("calibrate --batch: %+v", r)
	}
	var cal calibrateJSON
	decodeJSON(t, r.stdout, &cal)
	if len(cal.Judges) != 1 || cal.Judges[0].SelectedVersion == "" {
		t.Fatalf("result: %s", r.stdout)
	}
	if fake.Count() != 0 || fake.Batches.Submitted() < 3 || !strings.Contains(r.stderr, "batch round 1") {
		t.Fatalf("%d direct calls, %d batches\n%s", fake.Count(), fake.Batches.Submitted(), r.stderr)
	}
	t.Logf("%d batches", fake.Batches.Submitted())
	if r := gavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge", "--batch", "--offline"); r.code != 2 {
		t.Fatalf("--batch with --offline: %+v", r)
	}
}
