package store_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/store/sqldb"
	"github.com/gavelhq/gavel/teacher"
)

// fill puts a little of everything in a store.
func fill(t *testing.T, db *sqldb.DB) {
	t.Helper()
	ctx := context.Background()
	if err := put(ctx, db, rec("a", record.StatusPassed, "g"), rec("b", record.StatusAbandoned, "g"), rec("c", record.StatusFailed, "")); err != nil {
		t.Fatal(err)
	}
	sp, err := record.MakeSplit([]record.Member{{ID: "a", Label: record.Pass}, {ID: "b", Label: record.Fail}, {ID: "c", Label: record.Fail}},
		record.SplitSpec{Name: "s", Train: 0.34, Val: 0.33, Test: 0.33, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveSplit(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: "q"}}}
	if err := db.Cache().Put(ctx, &llm.Entry{Key: "k", Provider: "openai", Model: "openai:m", Request: req,
		Response: &llm.Response{Text: "answer", Cost: 0.5}}); err != nil {
		t.Fatal(err)
	}
	// A hit, written out (llm_hits).
	if err := db.Cache().RecordHit(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cache().Stats(ctx); err != nil {
		t.Fatal(err)
	}
	// A child version made after its parent but at a lower iteration (a
	// recalibration starts again from 0).
	parent, child := spec(t, "\nparent\n"), spec(t, "\nchild\n")
	parent.Iteration = 3
	child.Parent, child.Iteration = parent.Hash, 1
	for _, p := range []*judge.PromptVersion{parent, child} {
		if err := db.SavePrompt(ctx, p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := db.SaveVerdicts(ctx, []judge.Verdict{{RecordID: "a", Prompt: child.Hash, Model: "m", Outcome: judge.Pass, Score: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveCalibration(ctx, "passfail", child.Hash, "s", "m", &refine.Result{Versions: []*refine.Version{}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveChange(ctx, &deploy.Change{ID: "ch", Task: "t", Candidate: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(ctx, &deploy.Activation{Judge: "passfail", Version: parent.Hash, Action: "initial", Actor: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveToken(ctx, &deploy.Token{ID: "0123456789ab", Scope: "admin", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveReview(ctx, &deploy.Review{ChangeID: "ch", Reviewer: "r", Verdict: record.Pass}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddOutcome(ctx, "b", record.Outcome{Status: record.StatusLanded}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveWebhookDelivery(ctx, "d-1", "ping", []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutETag(ctx, "https://api.github.com/x", "\"e\"", map[string][]string{"Link": {"<u>; rel=\"next\""}}, []byte("[]")); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveDecisions(ctx, []teacher.Decision{{RecordID: "a", Prompt: "tp", Model: "m", Action: teacher.Keep, Label: record.Pass, Justification: "ok"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Executions().PutExecution(ctx, "ek", &acr.Execution{Status: "passed", Tested: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveChangeVerdict(ctx, "passfail", &judge.Verdict{RecordID: "ch", Prompt: child.Hash, Model: "m", Outcome: judge.Fail}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveRun(ctx, &runlog.Run{ID: "20261201-100000-aaaaaa", Command: "eval", Judge: "passfail", StartedAt: time.Now()},
		[]runlog.Record{{ID: "a", Outcome: record.Pass, Verdict: judge.Fail, Reasoning: "no"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatch(ctx, &llm.SubmittedBatch{BatchState: llm.BatchState{ID: "batch_1", Provider: "openai", Status: "in_progress", Requests: 1},
		SubmittedAt: time.Now()}, []string{"k"}); err != nil {
		t.Fatal(err)
	}
}

// copied are the tables a copy moves, from the schema description.
func copied() []string {
	var out []string
	for _, t := range sqldb.Schema {
		if t.CopyOrder != "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// dump is every copied table's rows as text, for comparing stores.
func dump(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	var out []string
	for _, table := range copied() {
		rows, err := db.SQL().Query(`SELECT * FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var cells []string
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				cells = append(cells, fmt.Sprintf("%s=%v", cols[i], v))
			}
			sort.Strings(cells) // column order differs between the schemas
			lines = append(lines, strings.Join(cells, " "))
		}
		rows.Close()
		sort.Strings(lines)
		out = append(out, table+":\n"+strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n")
}

// A store copied into a new one holds the same rows; a copy into a store
// that is not empty is refused; the copy's serial numbers go on after the
// copied ones.
func testCopy(t *testing.T) {
	ctx := context.Background()
	src := MustOpenDB(t)
	fill(t, src)
	// Every table a copy moves has rows here, so a table the copy left out
	// would show in the dump below.
	for _, table := range copied() {
		var n int
		if err := src.SQL().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil || n == 0 {
			t.Errorf("fill leaves table %s empty (%v): give it a row, so the copy of it is checked", table, err)
		}
	}
	dst := MustOpenDB(t)
	if err := sqldb.Copy(ctx, src, dst, nil); err != nil {
		t.Fatal(err)
	}
	if a, b := dump(t, src), dump(t, dst); a != b {
		t.Fatalf("the copy differs:\n%s\n----\n%s", a, b)
	}
	if err := sqldb.Copy(ctx, src, dst, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("copy into a full store: %v", err)
	}
	if err := put(ctx, dst, rec("d", record.StatusPassed, "")); err != nil {
		t.Fatalf("import after a copy: %v", err)
	}
	if got := ids(t, dst, record.Filter{}); got != "a,b,c,d" {
		t.Fatalf("records after the copy and a new import: %s", got)
	}
}

// Between the two databases, both ways: SQLite -> PostgreSQL -> SQLite
// gives back the same rows.
func TestCopyAcrossDatabases(t *testing.T) {
	pg, ok := postgresBackend(t)
	if !ok {
		t.Skip("no PostgreSQL")
	}
	ctx := context.Background()
	cur = sqliteBackend()
	src := MustOpenDB(t)
	fill(t, src)
	cur = pg
	mid := MustOpenDB(t)
	if err := sqldb.Copy(ctx, src, mid, nil); err != nil {
		t.Fatal(err)
	}
	cur = sqliteBackend()
	back := MustOpenDB(t)
	var tables []string
	if err := sqldb.Copy(ctx, mid, back, func(table string, n int) { tables = append(tables, fmt.Sprint(table, "=", n)) }); err != nil {
		t.Fatal(err)
	}
	if a, b := dump(t, src), dump(t, back); a != b {
		t.Fatalf("SQLite -> PostgreSQL -> SQLite changed the rows:\n%s\n----\n%s", a, b)
	}
	if a, b := dump(t, src), dump(t, mid); a != b {
		t.Fatalf("SQLite -> PostgreSQL changed the rows:\n%s\n----\n%s", a, b)
	}
	if !strings.Contains(strings.Join(tables, " "), "records=3") {
		t.Fatalf("progress %v", tables)
	}
}

// The store's tables and columns are those of the schema description, on
// each database; every table is copied or says why not.
func testSchema(t *testing.T) {
	db := MustOpenDB(t)
	if err := db.CheckSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tb := range sqldb.Schema {
		if (tb.CopyOrder == "") == (tb.NoCopy == "") {
			t.Errorf("table %s: give a copy order or say why a copy leaves it behind, not both", tb.Name)
		}
	}
}

// TestSchemaDialectsAgree: SQLite and PostgreSQL end their migrations with
// the same tables and columns.
func TestSchemaDialectsAgree(t *testing.T) {
	pgb, ok := postgresBackend(t)
	if !ok {
		t.Skip("no PostgreSQL")
	}
	ctx := context.Background()
	cur = sqliteBackend()
	lite := MustOpenDB(t)
	cur = pgb
	pg := MustOpenDB(t)
	a, err := lite.Columns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pg.Columns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(sqldb.Schema) {
		t.Errorf("SQLite has %d tables, the schema %d", len(a), len(sqldb.Schema))
	}
	for name, cols := range a {
		if fmt.Sprint(sortedCopy(cols)) != fmt.Sprint(sortedCopy(b[name])) {
			t.Errorf("table %s: SQLite %v, PostgreSQL %v", name, cols, b[name])
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			t.Errorf("table %s is on PostgreSQL only", name)
		}
	}
}

func sortedCopy(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
