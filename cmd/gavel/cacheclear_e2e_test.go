package main_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
)

type cacheStatsJSON struct {
	Entries int `json:"entries"`
	Invalid int `json:"invalid"`
	ByModel []struct {
		Model   string `json:"model"`
		Entries int    `json:"entries"`
		Invalid int    `json:"invalid"`
	} `json:"by_model"`
}

type cacheClearJSON struct {
	DryRun  bool `json:"dry_run"`
	Answers int  `json:"answers"`
	Invalid int  `json:"invalid"`
	Pending int  `json:"pending"`
}

// cache clear --invalid removes exactly the unreadable answers (counted
// by cache stats before and after; a dry run removes nothing), leaves the
// other answers, records and verdicts, and the next run asks again for
// those alone. --model and --before narrow what goes.
func TestCacheClearInvalid(t *testing.T) {
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	var broken atomic.Bool
	broken.Store(true)
	fake.Answer = func(*llmtest.Call) string { return `{"reasoning": "Fine.", "verdict": "pass"}` }
	fake.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if broken.Load() && c.N%4 < 2 {
			return llmtest.SchemaViolation // the repair call may break too: then the answer is stored unreadable
		}
		return llmtest.None
	}
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 60)
	t.Setenv("OPENAI_API_KEY", "test-key")
	judgeArgs := []string{"judge", "--judge", "passfail", "--split", "main:test", "--model", "openai:m", "--base-url", fake.URL + "/v1", "--concurrency", "1", "--json"}
	gavel(t, db, judgeArgs...) // unreadable answers make the run fail on their records: they are kept, and counted
	var before, after cacheStatsJSON
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &before)
	if before.Invalid == 0 || before.Invalid >= before.Entries || len(before.ByModel) != 1 || before.ByModel[0].Invalid != before.Invalid {
		t.Fatalf("cache stats after the broken run: %+v; want some unreadable answers among readable ones", before)
	}
	var dry, done, other cacheClearJSON
	decodeJSON(t, mustGavel(t, db, "cache", "clear", "--invalid", "--dry-run", "--json"), &dry)
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &after)
	if !dry.DryRun || dry.Invalid != before.Invalid || dry.Answers != before.Invalid || after.Entries != before.Entries || after.Invalid != before.Invalid {
		t.Fatalf("dry run: %+v, stats %+v (before %+v)", dry, after, before)
	}
	// Conditions narrow: another model's answers, or answers older than
	// the first run, are none of these.
	decodeJSON(t, mustGavel(t, db, "cache", "clear", "--invalid", "--model", "openai/other", "--json"), &other)
	if other.Answers != 0 {
		t.Fatalf("--model openai/other removed %+v", other)
	}
	decodeJSON(t, mustGavel(t, db, "cache", "clear", "--before", "2020-01-01", "--json"), &other)
	if other.Answers != 0 {
		t.Fatalf("--before 2020-01-01 removed %+v", other)
	}
	if r := gavel(t, db, "cache", "clear", "--before", "yesterday"); r.code != 2 {
		t.Fatalf("--before yesterday: %+v", r)
	}
	decodeJSON(t, mustGavel(t, db, "cache", "clear", "--invalid", "--model", "openai:m", "--json"), &done)
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &after)
	if done.DryRun || done.Invalid != before.Invalid || after.Invalid != 0 || after.Entries != before.Entries-before.Invalid {
		t.Fatalf("clear --invalid: %+v; stats %+v (before %+v)", done, after, before)
	}
	// The next run asks again for the cleared answers alone.
	broken.Store(false)
	sent := fake.Count()
	var rerun callsJSON
	decodeJSON(t, mustGavel(t, db, judgeArgs...), &rerun)
	if rerun.Calls.Sent != before.Invalid || fake.Count()-sent != before.Invalid {
		t.Fatalf("the rerun sent %d (the server saw %d); want the %d cleared", rerun.Calls.Sent, fake.Count()-sent, before.Invalid)
	}
	decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &after)
	if after.Invalid != 0 || after.Entries != before.Entries {
		t.Fatalf("after the rerun: %+v", after)
	}
}
