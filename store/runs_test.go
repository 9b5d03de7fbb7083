package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/runlog"
)

func testRuns(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Outcome by verdict: a pass/pass, b pass/fail (false fail), c
	// fail/pass (false pass), d fail/fail, e fail/invalid, f pass/none.
	recs := []runlog.Record{
		{ID: "a", Outcome: record.Pass, Verdict: judge.Pass, Reasoning: "Sound change."},
		{ID: "b", Outcome: record.Pass, Verdict: judge.Fail, Reasoning: "Drops an ERROR check."},
		{ID: "c", Outcome: record.Fail, Verdict: judge.Pass, Reasoning: "looks fine"},
		{ID: "d", Outcome: record.Fail, Verdict: judge.Fail, Reasoning: "off by one"},
		{ID: "e", Outcome: record.Fail, Verdict: judge.Invalid, Invalid: "not JSON"},
		{ID: "acme/web#36@s36", Outcome: record.Pass, Role: "other", Verdict: judge.Fail},
	}
	if err := db.SaveRun(ctx, &runlog.Run{ID: "20261201-100000-abcdef", Command: "eval", Judge: "passfail", StartedAt: start}, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveRun(ctx, &runlog.Run{ID: "20261201-110000-abcdef", Command: "judge", Judge: "rubric5", StartedAt: start.Add(time.Hour)}, nil); err != nil {
		t.Fatal(err)
	}
	all, err := db.Runs(ctx, runlog.RunFilter{})
	if err != nil || len(all) != 2 || all[0].Command != "judge" || all[1].Records != 6 {
		t.Fatalf("runs newest first: %+v, %v", all, err)
	}
	if rs, _ := db.Runs(ctx, runlog.RunFilter{Judge: "passfail"}); len(rs) != 1 || rs[0].ID != "20261201-100000-abcdef" {
		t.Fatalf("runs of passfail: %+v", rs)
	}
	if rs, _ := db.Runs(ctx, runlog.RunFilter{Command: "eval", Limit: 1}); len(rs) != 1 {
		t.Fatalf("runs of eval: %+v", rs)
	}
	if r, err := db.Run(ctx, "20261201-10"); err != nil || r.Judge != "passfail" {
		t.Fatalf("a unique prefix: %+v, %v", r, err)
	}
	if _, err := db.Run(ctx, "20261201"); err == nil || !strings.Contains(err.Error(), "more than one") {
		t.Fatalf("an ambiguous prefix: %v", err)
	}
	if _, err := db.Run(ctx, "nope"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("no such run: %v", err)
	}
	for _, c := range []struct {
		f     runlog.Filter
		want  string
		total int
	}{
		{runlog.Filter{}, "a,b,c,d,e,acme/web#36@s36", 6},
		{runlog.Filter{Role: "other"}, "acme/web#36@s36", 1},
		{runlog.Filter{Which: runlog.FalseFail}, "b,acme/web#36@s36", 2},
		{runlog.Filter{Which: runlog.FalsePass}, "c", 1},
		{runlog.Filter{Which: runlog.Disagree}, "b,c,e,acme/web#36@s36", 4},
		{runlog.Filter{Which: runlog.Agree}, "a,d", 2},
		{runlog.Filter{Search: "error"}, "b", 1},
		{runlog.Filter{Offset: 2, Limit: 2}, "c,d", 6},
		{runlog.Filter{Sort: "verdict"}, "b,d,acme/web#36@s36,e,a,c", 6},
		{runlog.Filter{Sort: "id", Which: runlog.Disagree}, "acme/web#36@s36,b,c,e", 4},
	} {
		got, total, err := db.RunRecords(ctx, "20261201-100000", c.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i, r := range got {
			ids = append(ids, r.ID)
			// Each agrees with the filter's own rule.
			if c.f.Limit == 0 && !c.f.Keeps(&got[i]) {
				t.Errorf("%+v: the store kept %s, the filter would not", c.f, r.ID)
			}
		}
		if strings.Join(ids, ",") != c.want || total != c.total {
			t.Errorf("%+v: %v (%d in all), want %s (%d)", c.f, ids, total, c.want, c.total)
		}
	}
	got, _, _ := db.RunRecords(ctx, "20261201-100000", runlog.Filter{Which: runlog.FalsePass})
	if len(got) != 1 || got[0].Seq != 3 || got[0].Reasoning != "looks fine" {
		t.Fatalf("a record round trip: %+v", got)
	}
}
