package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/teacher"
)

func spec(t *testing.T, extra string) *judge.PromptVersion {
	t.Helper()
	s, err := judge.Load("passfail")
	if err != nil {
		t.Fatal(err)
	}
	s.System += extra
	return judge.VersionOf(s)
}

func testJudgesAndVerdicts(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	a, b := spec(t, ""), spec(t, "\nOne more rule.\n")
	if err := db.SavePrompt(ctx, a); err != nil {
		t.Fatal(err)
	}
	b.Parent, b.Iteration, b.Edits, b.Metrics = a.Hash, 1, []string{"One more rule."}, map[string]float64{"val_scott_pi": 0.5}
	if err := db.SavePrompt(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Saving it again without lineage keeps what is known.
	if err := db.SavePrompt(ctx, judge.VersionOf(b.Spec)); err != nil {
		t.Fatal(err)
	}
	got, err := db.Prompt(ctx, b.Hash[:8])
	if err != nil || got.Parent != a.Hash || got.Iteration != 1 || len(got.Edits) != 1 || got.Metrics["val_scott_pi"] != 0.5 || got.Spec.System != b.Spec.System {
		t.Fatalf("prompt %+v %v", got, err)
	}
	if _, err := db.Prompt(ctx, "abc"); err == nil || !strings.Contains(err.Error(), "four characters") {
		t.Fatalf("short prefix: %v", err)
	}
	if _, err := db.Prompt(ctx, "ffffffff"); err == nil || !strings.Contains(err.Error(), "no prompt version") {
		t.Fatalf("unknown version: %v", err)
	}
	ps, err := db.Prompts(ctx, "passfail")
	if err != nil || len(ps) != 2 {
		t.Fatalf("prompts %d %v", len(ps), err)
	}
	if err := put(ctx, db, rec("r1", record.StatusPassed, ""), rec("r2", record.StatusFailed, "")); err != nil {
		t.Fatal(err)
	}
	vs := []judge.Verdict{{RecordID: "r1", Prompt: a.Hash, Model: "m", Outcome: judge.Pass, Score: 1, Reasoning: "ok"},
		{RecordID: "r2", Prompt: a.Hash, Model: "m", Outcome: judge.Fail, Score: 0}}
	if err := db.SaveVerdicts(ctx, vs); err != nil {
		t.Fatal(err)
	}
	// The same verdicts again (a cached rerun) write nothing: each row
	// keeps the time it was first given; a changed one is rewritten, with
	// its new time, beside an unchanged one that is not.
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { clock = clock.Add(time.Hour); return clock }
	givenAt := func(id string) string {
		var at string
		if err := db.SQL().QueryRowContext(ctx, `SELECT created_at FROM verdicts WHERE record_id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	first1, first2 := givenAt("r1"), givenAt("r2")
	if err := db.SaveVerdicts(ctx, vs); err != nil {
		t.Fatal(err)
	}
	if givenAt("r1") != first1 || givenAt("r2") != first2 {
		t.Fatalf("unchanged verdicts rewritten: %s %s, first %s %s", givenAt("r1"), givenAt("r2"), first1, first2)
	}
	vs[1].Outcome, vs[1].Reasoning = judge.Invalid, "replaced"
	if err := db.SaveVerdicts(ctx, vs); err != nil {
		t.Fatal(err)
	}
	if givenAt("r1") != first1 || givenAt("r2") == first2 {
		t.Fatalf("one changed verdict: r1 %s (first %s), r2 %s (first %s)", givenAt("r1"), first1, givenAt("r2"), first2)
	}
	m, err := db.Verdicts(ctx, a.Hash, "m")
	if err != nil || len(m) != 2 || m["r1"].Reasoning != "ok" || m["r2"].Outcome != judge.Invalid {
		t.Fatalf("verdicts %+v %v", m, err)
	}
	if m, _ := db.Verdicts(ctx, a.Hash, "other"); len(m) != 0 {
		t.Fatalf("another model's verdicts: %v", m)
	}
	ds := []teacher.Decision{{RecordID: "r1", Prompt: "t1", Model: "m", Action: teacher.Keep, Label: record.Pass}}
	if err := db.SaveDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveDecisions(ctx, ds); err != nil {
		t.Fatalf("the same decisions again: %v", err)
	}
	if err := db.SaveCalibration(ctx, "passfail", b.Hash, "main", "m", &refine.Result{Versions: []*refine.Version{{Hash: a.Hash}, {Hash: b.Hash}}}); err != nil {
		t.Fatal(err)
	}
	cals, err := db.Calibrations(ctx, "passfail")
	if err != nil || len(cals) != 1 || cals[0].Split != "main" || cals[0].Model != "m" || len(cals[0].Versions) != 2 || cals[0].At.IsZero() {
		t.Fatalf("calibrations %+v %v", cals, err)
	}
}

func testServiceTables(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	c := &deploy.Change{ID: "acme/app#1", Task: "t", Candidate: "c", Context: map[string]string{"log": "x"}, Group: "acme/app"}
	if err := db.SaveChange(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveChange(ctx, c); err != nil {
		t.Fatalf("the same change again: %v", err)
	}
	other := *c
	other.Candidate = "d"
	if err := db.SaveChange(ctx, &other); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("another change under the id: %v", err)
	}
	got, err := db.Change(ctx, c.ID)
	if err != nil || got.Task != "t" || got.Context["log"] != "x" || got.Group != "acme/app" || got.CreatedAt.IsZero() {
		t.Fatalf("change %+v %v", got, err)
	}
	if _, err := db.Change(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("missing change: %v", err)
	}
	a, b := spec(t, ""), spec(t, "\nx\n")
	for _, p := range []*judge.PromptVersion{a, b} {
		if err := db.SavePrompt(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	c2 := &deploy.Change{ID: "acme/app#2", Task: "t2", Candidate: "c2"}
	if err := db.SaveChange(ctx, c2); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*judge.Verdict{{RecordID: c.ID, Prompt: a.Hash, Model: "m", Outcome: judge.Pass},
		{RecordID: c2.ID, Prompt: a.Hash, Model: "m", Outcome: judge.Fail}, {RecordID: c.ID, Prompt: b.Hash, Model: "m", Outcome: judge.Fail}} {
		if err := db.SaveChangeVerdict(ctx, "passfail", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := db.ChangeVerdict(ctx, c.ID, b.Hash, "m"); err != nil || v == nil || v.Outcome != judge.Fail {
		t.Fatalf("verdict %+v %v", v, err)
	}
	if v, err := db.ChangeVerdict(ctx, c.ID, b.Hash, "other"); err != nil || v != nil {
		t.Fatalf("no verdict: %+v %v", v, err)
	}
	all, err := db.ChangeVerdicts(ctx, deploy.VerdictFilter{})
	if err != nil || len(all) != 3 || all[0].Verdict.Prompt != b.Hash {
		t.Fatalf("all verdicts, newest first: %+v %v", all, err)
	}
	if vs, _ := db.ChangeVerdicts(ctx, deploy.VerdictFilter{Prompt: a.Hash, Limit: 1}); len(vs) != 1 || vs[0].Verdict.RecordID != c2.ID {
		t.Fatalf("newest of version a: %+v", vs)
	}
	if vs, _ := db.ChangeVerdicts(ctx, deploy.VerdictFilter{ChangeID: c.ID}); len(vs) != 2 {
		t.Fatalf("verdicts on one change: %+v", vs)
	}
	// Only changes with an outcome are judged records, in outcome order.
	r2 := &record.Record{ID: c2.ID, Task: "t2", Candidate: "c2", Outcome: record.Outcome{Status: record.StatusFailed, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	r1 := &record.Record{ID: c.ID, Task: "t", Candidate: "c", Outcome: record.Outcome{Status: record.StatusLanded, At: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}}
	for _, r := range []*record.Record{r1, r2} {
		if err := r.Normalize(); err != nil {
			t.Fatal(err)
		}
	}
	if jrs, _ := db.JudgedRecords(ctx, deploy.VerdictFilter{}); len(jrs) != 0 {
		t.Fatalf("judged records before any outcome: %d", len(jrs))
	}
	if err := put(ctx, db, r1, r2); err != nil {
		t.Fatal(err)
	}
	jrs, err := db.JudgedRecords(ctx, deploy.VerdictFilter{Prompt: a.Hash, Model: "m"})
	if err != nil || len(jrs) != 2 || jrs[0].Record.ID != c2.ID || jrs[1].Record.ID != c.ID || jrs[0].Verdict.Outcome != judge.Fail || jrs[0].Judge != "passfail" {
		t.Fatalf("judged records %+v %v", jrs, err)
	}
	// The stamp of what JudgedRecords lists changes with every change of
	// its answer: an outcome version, a verdict saved over with another
	// outcome; and not with another version's verdicts.
	fa := deploy.VerdictFilter{Judge: "passfail", Prompt: a.Hash, Model: "m"}
	stamp := func() string {
		t.Helper()
		s, err := db.JudgedStamp(ctx, fa)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s0 := stamp()
	if err := db.SaveChangeVerdict(ctx, "passfail", &judge.Verdict{RecordID: c.ID, Prompt: b.Hash, Model: "m", Outcome: judge.Pass}); err != nil {
		t.Fatal(err)
	}
	if s := stamp(); s != s0 {
		t.Fatalf("another version's verdict changed the stamp: %s -> %s", s0, s)
	}
	if err := db.SaveChangeVerdict(ctx, "passfail", &judge.Verdict{RecordID: c2.ID, Prompt: a.Hash, Model: "m", Outcome: judge.Pass}); err != nil {
		t.Fatal(err)
	}
	s1 := stamp()
	if s1 == s0 {
		t.Fatalf("a verdict saved over with another outcome left the stamp %s", s1)
	}
	if _, _, err := db.AddOutcome(ctx, c2.ID, record.Outcome{Status: record.StatusPassed, At: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, "test"); err != nil {
		t.Fatal(err)
	}
	if s := stamp(); s == s1 {
		t.Fatalf("a new outcome version left the stamp %s", s)
	}
	// Activations: each must name the version it replaces.
	act := &deploy.Activation{Judge: "passfail", Version: a.Hash, Action: deploy.ActionInitial, Actor: "gavel"}
	if err := db.Activate(ctx, act); err != nil || act.Seq == 0 || act.At.IsZero() {
		t.Fatalf("activate: %+v %v", act, err)
	}
	stale := &deploy.Activation{Judge: "passfail", Version: b.Hash, Action: deploy.ActionPromote, Actor: "x"}
	if err := db.Activate(ctx, stale); !errors.Is(err, deploy.ErrActiveChanged) {
		t.Fatalf("a promotion that missed a change: %v", err)
	}
	ev := &deploy.Evidence{Split: "main", Part: record.Test, N: 10, Candidate: b.Hash, Baseline: a.Hash, Passed: true}
	next := &deploy.Activation{Judge: "passfail", Version: b.Hash, Previous: a.Hash, Action: deploy.ActionPromote, Actor: "x", Reason: "why", Evidence: ev}
	if err := db.Activate(ctx, next); err != nil || next.Seq <= act.Seq {
		t.Fatalf("promote: %+v %v", next, err)
	}
	as, err := db.Activations(ctx, "passfail")
	if err != nil || len(as) != 2 || as[1].Evidence == nil || as[1].Evidence.N != 10 || as[1].Reason != "why" || as[0].Evidence != nil {
		t.Fatalf("activations %+v %v", as, err)
	}
	if as, _ := db.Activations(ctx, "other"); len(as) != 0 {
		t.Fatalf("another judge's activations: %+v", as)
	}
	// Tokens.
	tok := &deploy.Token{ID: "0123456789ab", Name: "ci", Scope: deploy.ScopeJudge, Hash: "h"}
	if err := db.SaveToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveToken(ctx, &deploy.Token{ID: "x", Scope: "root", Hash: "h"}); err == nil {
		t.Fatal("a token of an unknown scope was stored")
	}
	if err := db.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(ctx, "missing"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("revoke a missing token: %v", err)
	}
	got2, err := db.Token(ctx, tok.ID)
	if err != nil || got2.RevokedAt.IsZero() || got2.Hash != "h" || got2.Name != "ci" {
		t.Fatalf("token %+v %v", got2, err)
	}
	if ts, _ := db.Tokens(ctx); len(ts) != 1 {
		t.Fatalf("tokens %+v", ts)
	}
	// Reviews: a reviewer's second verdict replaces the first.
	for _, v := range []record.Label{record.Pass, record.Fail} {
		if err := db.SaveReview(ctx, &deploy.Review{ChangeID: c.ID, Reviewer: "ann", Verdict: v, Note: string(v)}); err != nil {
			t.Fatal(err)
		}
	}
	rv, err := db.Reviews(ctx)
	if err != nil || len(rv) != 1 || rv[0].Verdict != record.Fail || rv[0].Note != "fail" {
		t.Fatalf("reviews %+v %v", rv, err)
	}
	if err := db.SaveReview(ctx, &deploy.Review{ChangeID: "nope", Reviewer: "ann", Verdict: record.Pass}); err == nil {
		t.Fatal("a review of an unknown change was stored")
	}
}
