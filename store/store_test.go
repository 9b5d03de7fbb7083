package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/store/sqldb"
)

func rec(id string, status record.Status, group string) *record.Record {
	r := &record.Record{ID: id, Task: "task " + id, Candidate: "patch " + id, Group: group,
		Outcome: record.Outcome{Status: status}}
	if err := r.Normalize(); err != nil {
		panic(err)
	}
	return r
}

func put(ctx context.Context, db *sqldb.DB, rs ...*record.Record) error {
	return db.Import(ctx, func(w record.Writer) error {
		for _, r := range rs {
			if _, err := w.Put(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func ids(t *testing.T, db *sqldb.DB, f record.Filter) string {
	t.Helper()
	var out []string
	if err := db.Records(context.Background(), f, func(r *record.Record) error {
		out = append(out, r.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

func testMigrateEmptyDatabase(t *testing.T) {
	ctx := context.Background()
	path := freshStore(t)
	db, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"sqlite": 13, "postgres": 7}[db.Dialect()]
	v, err := db.SchemaVersion(ctx)
	if err != nil || v != want {
		t.Fatalf("schema version %d, %v; want %d, one per migration", v, err, want)
	}
	for _, table := range []string{"records", "splits", "split_members", "migrations", "llm_cache", "llm_hits", "prompt_versions",
		"verdicts", "teacher_decisions", "calibrations", "executions", "changes", "change_verdicts", "activations", "tokens", "reviews", "llm_claims", "batches", "batch_requests", "record_outcomes", "http_etags", "webhook_deliveries", "runs", "run_records"} {
		var n int
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil || n < 0 {
			t.Errorf("table %s: %v", table, err)
		}
	}
	db.Close()

	// Opening again applies nothing and keeps the version.
	db, err = openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if v2, _ := db.SchemaVersion(ctx); v2 != v {
		t.Fatalf("version changed on reopen: %d -> %d", v, v2)
	}
	// A store written by a newer gavel is refused, not silently used.
	if _, err := db.SQL().Exec(`INSERT INTO migrations (name, applied_at) VALUES ('9999_future.sql', 'now')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := openStore(ctx, path); err == nil || !strings.Contains(err.Error(), "newer gavel") {
		t.Fatalf("open of a newer store: error = %v", err)
	}
}

func testImportTransaction(t *testing.T) { bothWays(t, importTransaction) }

func importTransaction(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if err := put(ctx, db, rec("a", record.StatusPassed, "g1"), rec("b", record.StatusFailed, "g1")); err != nil {
		t.Fatal(err)
	}
	// A failure part-way rolls back everything the import wrote.
	boom := errors.New("boom")
	err := db.Import(ctx, func(w record.Writer) error {
		if _, err := w.Put(ctx, rec("c", record.StatusLanded, "")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v", err)
	}
	if got := ids(t, db, record.Filter{}); got != "a,b" {
		t.Fatalf("after rollback: %s", got)
	}
	// Identical content is unchanged; different content conflicts.
	var res record.PutResult
	err = db.Import(ctx, func(w record.Writer) error {
		var err error
		res, err = w.Put(ctx, rec("a", record.StatusPassed, "g1"))
		return err
	})
	if err != nil || res != record.Unchanged {
		t.Fatalf("re-put: %v, %v", res, err)
	}
	changed := rec("a", record.StatusPassed, "g1")
	changed.Candidate = "another patch"
	err = put(ctx, db, changed)
	if !errors.Is(err, record.ErrConflict) || !strings.Contains(err.Error(), "differs in candidate") {
		t.Fatalf("conflict error = %v", err)
	}
	// A cancelled context rolls back too.
	cctx, cancel := context.WithCancel(ctx)
	err = db.Import(cctx, func(w record.Writer) error {
		if _, err := w.Put(cctx, rec("d", record.StatusPassed, "")); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled import: %v", err)
	}
	if got := ids(t, db, record.Filter{}); got != "a,b" {
		t.Fatalf("after cancel: %s", got)
	}
}

func testRecordsRoundTripAndImmutable(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	r, err := record.Native{}.Decode([]byte(`{"id":"x","task":"t","candidate":"a < b && c","reference":"r","context":{"log":"FAIL"},"group":"g","outcome":{"status":"abandoned","reason":"superseded","at":"2025-06-01T08:00:00+01:00"},"meta":{"n":1.0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	want, _ := r.Canonical()
	if err := put(ctx, db, &r); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := db.Records(ctx, record.Filter{}, func(s *record.Record) error {
		got, err = s.Canonical()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("stored record changed:\n%s\n%s", got, want)
	}
	if _, err := db.SQL().Exec(`UPDATE records SET label = 'pass' WHERE id = 'x'`); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("update of a record: error = %v", err)
	}
}

func testRecordsFilter(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if err := put(ctx, db,
		rec("a", record.StatusPassed, "g1"), rec("b", record.StatusFailed, "g1"),
		rec("c", record.StatusLanded, "g2"), rec("d", record.StatusDraft, ""),
		rec("e", record.StatusAbandoned, "")); err != nil {
		t.Fatal(err)
	}
	split := &record.Split{Spec: record.SplitSpec{Name: "s", Train: 0.5, Test: 0.5},
		Assign: map[string]record.Part{"a": record.Train, "b": record.Train, "c": record.Test, "d": record.Test, "e": record.Test}}
	if err := db.SaveSplit(ctx, split, false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    record.Filter
		want string
	}{
		{"all", record.Filter{}, "a,b,c,d,e"},
		{"pass", record.Filter{Labels: []record.Label{record.Pass}}, "a,c"},
		{"statuses", record.Filter{Statuses: []record.Status{record.StatusFailed, record.StatusDraft}}, "b,d"},
		{"no drafts", record.Filter{ExcludeStatus: []record.Status{record.StatusDraft}}, "a,b,c,e"},
		{"group", record.Filter{Group: "g1"}, "a,b"},
		{"limit", record.Filter{Limit: 2}, "a,b"},
		{"split part", record.Filter{Split: "s", Part: record.Test}, "c,d,e"},
		{"split part without drafts", record.Filter{Split: "s", Part: record.Test, ExcludeStatus: []record.Status{record.StatusDraft}}, "c,e"},
		{"whole split", record.Filter{Split: "s"}, "a,b,c,d,e"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(t, db, tc.f); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			// Match agrees with the store on everything but the split.
			if tc.f.Split == "" && tc.f.Limit == 0 {
				var m []string
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					st := map[string]record.Status{"a": record.StatusPassed, "b": record.StatusFailed, "c": record.StatusLanded, "d": record.StatusDraft, "e": record.StatusAbandoned}[id]
					g := map[string]string{"a": "g1", "b": "g1", "c": "g2"}[id]
					if tc.f.Match(rec(id, st, g)) {
						m = append(m, id)
					}
				}
				if strings.Join(m, ",") != tc.want {
					t.Fatalf("Match gives %v", m)
				}
			}
		})
	}
	if err := db.Records(ctx, record.Filter{Split: "nope"}, func(*record.Record) error { return nil }); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown split: %v", err)
	}
}

func testSplits(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	var rs []*record.Record
	for i := range 20 {
		st := record.StatusPassed
		if i%3 == 0 {
			st = record.StatusFailed
		}
		rs = append(rs, rec(fmt.Sprint("r", i), st, fmt.Sprint("g", i/2)))
	}
	if err := put(ctx, db, rs...); err != nil {
		t.Fatal(err)
	}
	var ms []record.Member
	for _, r := range rs {
		ms = append(ms, record.MemberOf(r))
	}
	spec := record.SplitSpec{Name: "main", Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1,
		ExcludeStatus: []record.Status{record.StatusDraft}}
	s, err := record.MakeSplit(ms, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveSplit(ctx, s, false); err != nil {
		t.Fatal(err)
	}
	got, err := db.Split(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Spec) != fmt.Sprint(spec) || len(got.Assign) != 20 {
		t.Fatalf("read back %+v (%d members)", got.Spec, len(got.Assign))
	}
	for id, p := range s.Assign {
		if got.Assign[id] != p {
			t.Fatalf("record %s: stored part %s, made %s", id, got.Assign[id], p)
		}
	}
	if err := db.SaveSplit(ctx, s, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second save: %v", err)
	}
	spec.Seed = 2
	s2, _ := record.MakeSplit(ms, spec)
	if err := db.SaveSplit(ctx, s2, true); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Split(ctx, "main")
	if got.Spec.Seed != 2 || len(got.Assign) != 20 {
		t.Fatalf("replace: %+v", got.Spec)
	}
	list, err := db.Splits(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "main" {
		t.Fatalf("Splits = %+v, %v", list, err)
	}
	// A split naming an unknown record is refused by the foreign key, and
	// nothing of it is kept.
	bad := &record.Split{Spec: record.SplitSpec{Name: "bad", Train: 1}, Assign: map[string]record.Part{"r1": record.Train, "ghost": record.Train}}
	if err := db.SaveSplit(ctx, bad, false); err == nil {
		t.Fatal("split with an unknown record saved")
	}
	if _, err := db.Split(ctx, "bad"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("half-saved split: %v", err)
	}
}

func testExecutionCache(t *testing.T) {
	ctx := context.Background()
	c := MustOpenDB(t).Executions()
	if e, err := c.GetExecution(ctx, "k1"); e != nil || err != nil {
		t.Fatalf("miss: %+v %v", e, err)
	}
	want := &acr.Execution{Status: "failed", Reason: "a test failed", Tested: true, Output: "AssertionError"}
	if err := c.PutExecution(ctx, "k1", want); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetExecution(ctx, "k1")
	if err != nil || *got != *want {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	// A second result for the key replaces the first.
	if err := c.PutExecution(ctx, "k1", &acr.Execution{Status: "passed", Tested: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetExecution(ctx, "k1"); got.Status != "passed" || got.Output != "" {
		t.Fatalf("replaced: %+v", got)
	}
}
