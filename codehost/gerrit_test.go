package codehost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/internal/gerrittest"
	"github.com/gavelhq/gavel/record"
)

func TestImportGerrit(t *testing.T) {
	ctx := context.Background()
	f, srv := gerrittest.New(t)
	f.Add(1756, "MERGED", strings.Repeat("a", 40), "2026-11-20 10:00:00.000000000", "2026-11-20 09:59:00.000000000")
	f.Add(1757, "ABANDONED", strings.Repeat("b", 40), "2026-11-20 11:00:00.000000000", "",
		"Patch Set 1:\n\nThis needs a test.", "Abandoned\n\nSuperseded by I8473b95934b5732ac55d26311a706c9c2bde9940")
	f.Add(1758, "NEW", strings.Repeat("c", 40), "2026-11-20 12:00:00.000000000", "")
	db := openStore(t)
	opt := codehost.GerritOptions{URL: srv.URL, User: "jdoe", Password: "http-password"}
	res, err := codehost.ImportGerrit(ctx, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 3 || len(f.Queries) != 2 || f.Queries[0] != "status:merged OR status:abandoned" {
		t.Fatalf("%+v, queries %q", res, f.Queries)
	}
	recs := all(t, db)
	if keys(recs) != "demo~1756 demo~1757 demo~1758" {
		t.Fatalf("records %s", keys(recs))
	}
	m := recs["demo~1756"]
	if m.Outcome.Status != record.StatusLanded || m.Outcome.At.Format("15:04") != "09:59" ||
		!strings.HasPrefix(m.Task, "Use an EventBus to manage star icons\n\nImage widgets") ||
		!strings.Contains(m.Candidate, "+new\n") || !strings.Contains(m.Candidate, "-old 1756") || m.Context["branch"] != "master" {
		t.Fatalf("merged %+v", m)
	}
	if a := recs["demo~1757"]; a.Outcome.Status != record.StatusAbandoned || a.Outcome.Reason != "Superseded by I8473b95934b5732ac55d26311a706c9c2bde9940" {
		t.Fatalf("abandoned %+v", a.Outcome)
	}
	if d := recs["demo~1758"]; d.Outcome.Status != record.StatusDraft {
		t.Fatalf("new %+v", d.Outcome)
	}

	// A second import: nothing new. Then 1757 is restored and merged, and
	// 1758 gets a second patch set.
	if res, err = codehost.ImportGerrit(ctx, db, opt); err != nil || res.Inserted != 0 || res.Unchanged != 3 {
		t.Fatalf("again: %+v %v", res, err)
	}
	f.Lock()
	f.Changes[1]["status"], f.Changes[1]["submitted"] = "MERGED", "2026-11-21 08:00:00.000000000"
	rev := f.Changes[2]["revisions"].(map[string]any)[strings.Repeat("c", 40)]
	f.Changes[2]["revisions"] = map[string]any{strings.Repeat("d", 40): rev}
	f.Changes[2]["current_revision"] = strings.Repeat("d", 40)
	f.Patches[strings.Repeat("d", 40)] = "diff --git a/Star.java b/Star.java\n+second patch set\n"
	f.Unlock()
	if res, err = codehost.ImportGerrit(ctx, db, opt); err != nil || res.NewOutcomes != 1 || res.Revisions != 1 {
		t.Fatalf("after changes: %+v %v", res, err)
	}
	recs = all(t, db)
	if recs["demo~1757"].Outcome.Status != record.StatusLanded || recs["demo~1758@dddddddddddd"] == nil ||
		recs["demo~1758@dddddddddddd"].Candidate != "diff --git a/Star.java b/Star.java\n+second patch set\n" {
		t.Fatalf("records %s", keys(recs))
	}

	// Without the password: Gerrit's 401, named.
	opt.Password = "wrong"
	if _, err := codehost.ImportGerrit(ctx, db, opt); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong password: %v", err)
	}
}
