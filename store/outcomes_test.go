package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
)

// A record's outcome changes only by a new version: the record stays as
// imported, the same outcome again adds nothing, reads and filters see the
// latest, and the history keeps every version in order.
func testOutcomeVersions(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if err := put(ctx, db, rec("acme/app#42", record.StatusAbandoned, "acme/app#40"), rec("other", record.StatusLanded, "")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddOutcome(ctx, "nobody", record.Outcome{Status: record.StatusLanded}, "test"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown record: %v", err)
	}
	// The same status and reason as the record's own: nothing new.
	v, added, err := db.AddOutcome(ctx, "acme/app#42", record.Outcome{Status: record.StatusAbandoned}, "import")
	if err != nil || added || v != 1 {
		t.Fatalf("same outcome: version %d added %v err %v", v, added, err)
	}
	merged := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v, added, err = db.AddOutcome(ctx, "acme/app#42", record.Outcome{Status: record.StatusLanded, At: merged}, "webhook d1")
	if err != nil || !added || v != 2 {
		t.Fatalf("reopened and merged: version %d added %v err %v", v, added, err)
	}
	// A replay of the same report, with another time: nothing new.
	if v, added, err = db.AddOutcome(ctx, "acme/app#42", record.Outcome{Status: record.StatusLanded, At: merged.Add(time.Hour)}, "webhook d2"); err != nil || added || v != 2 {
		t.Fatalf("replay: version %d added %v err %v", v, added, err)
	}
	if ids(t, db, record.Filter{Statuses: []record.Status{record.StatusLanded}}) != "acme/app#42,other" {
		t.Fatalf("landed: %s", ids(t, db, record.Filter{Statuses: []record.Status{record.StatusLanded}}))
	}
	if got := ids(t, db, record.Filter{Labels: []record.Label{record.Fail}}); got != "" {
		t.Fatalf("failures: %q", got)
	}
	if got := ids(t, db, record.Filter{ExcludeStatus: []record.Status{record.StatusLanded}}); got != "" {
		t.Fatalf("not landed: %q", got)
	}
	var got *record.Record
	if err := db.Records(ctx, record.Filter{IDs: []string{"acme/app#42"}}, func(r *record.Record) error { got = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if got.Outcome.Status != record.StatusLanded || got.Outcome.Label != record.Pass || got.Outcome.Source != record.SourceReview || !got.Outcome.At.Equal(merged) {
		t.Fatalf("read back %+v", got.Outcome)
	}
	if got.Task != "task acme/app#42" || got.Group != "acme/app#40" {
		t.Fatalf("record changed: %+v", got)
	}
	hist, err := db.Outcomes(ctx, "acme/app#42")
	if err != nil || len(hist) != 2 || hist[0].Version != 1 || hist[0].Outcome.Status != record.StatusAbandoned ||
		hist[1].Version != 2 || hist[1].Outcome.Status != record.StatusLanded || hist[1].Origin != "webhook d1" {
		t.Fatalf("history %+v %v", hist, err)
	}
	// The record itself is as it was imported: importing it again is a
	// no-op, not a conflict with its later outcome.
	if err := put(ctx, db, rec("acme/app#42", record.StatusAbandoned, "acme/app#40")); err != nil {
		t.Fatalf("re-import: %v", err)
	}
	// Versions are immutable.
	if _, err := db.SQL().ExecContext(ctx, `UPDATE record_outcomes SET status = 'abandoned' WHERE record_id = 'acme/app#42'`); err == nil {
		t.Fatal("an outcome version was edited")
	}
	// A judged change's record is judged against its latest outcome.
	if err := db.SaveChange(ctx, &deploy.Change{ID: "acme/app#42", Task: "t", Candidate: "c"}); err != nil {
		t.Fatal(err)
	}
	p := spec(t, "\njudge\n")
	if err := db.SavePrompt(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveChangeVerdict(ctx, "passfail", &judge.Verdict{RecordID: "acme/app#42", Prompt: p.Hash, Model: "m", Outcome: judge.Fail}); err != nil {
		t.Fatal(err)
	}
	jr, err := db.JudgedRecords(ctx, deploy.VerdictFilter{})
	if err != nil || len(jr) != 1 || jr[0].Record.Outcome.Status != record.StatusLanded {
		t.Fatalf("judged records %+v %v", jr, err)
	}

	// Concurrent writers of different outcomes number their versions
	// apart; none is lost.
	var wg sync.WaitGroup
	statuses := []record.Status{record.StatusAbandoned, record.StatusDraft, record.StatusAbandoned, record.StatusDraft}
	errs := make([]error, len(statuses))
	for i, st := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = db.AddOutcome(ctx, "other", record.Outcome{Status: st, Reason: string(rune('a' + i))}, "w")
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hist, err = db.Outcomes(ctx, "other")
	if err != nil || len(hist) != 1+len(statuses) {
		t.Fatalf("concurrent history: %d versions, %v", len(hist), err)
	}
	for i, h := range hist {
		if h.Version != i+1 {
			t.Fatalf("versions %+v", hist)
		}
	}
}

// The conditional-request cache keeps one answer a URL, replaced by the
// next.
func testETags(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if _, ok, err := db.ETag(ctx, "u"); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	for _, body := range []string{"first", "second"} {
		if err := db.PutETag(ctx, "u", `"`+body+`"`, map[string][]string{"Link": {"<n>; rel=\"next\""}}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	e, ok, err := db.ETag(ctx, "u")
	if err != nil || !ok || e.ETag != `"second"` || string(e.Body) != "second" || e.Header["Link"][0] != `<n>; rel="next"` {
		t.Fatalf("%+v %v %v", e, ok, err)
	}
	// A webhook delivery's first answer stays.
	if _, ok, err := db.WebhookDelivery(ctx, "d"); ok || err != nil {
		t.Fatalf("unknown delivery: %v %v", ok, err)
	}
	for _, result := range []string{`{"first":true}`, `{"second":true}`} {
		if err := db.SaveWebhookDelivery(ctx, "d", "pull_request", []byte(result)); err != nil {
			t.Fatal(err)
		}
	}
	if b, ok, err := db.WebhookDelivery(ctx, "d"); !ok || err != nil || string(b) != `{"first":true}` {
		t.Fatalf("delivery %s %v %v", b, ok, err)
	}
}

// Four imports of one identical record at once: each Put may answer
// Inserted, but once they have committed exactly one really inserted it
// (what the service's created answer rests on).
func testConcurrentIdenticalImports(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	r := rec("acme/app#7", record.StatusLanded, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	total, failed := 0, 0
	for range 4 {
		wg.Go(func() {
			var w record.Writer
			err := db.Import(ctx, func(wr record.Writer) error {
				w = wr
				_, err := wr.Put(ctx, r)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				t.Errorf("import: %v", err)
				return
			}
			total += w.(interface{ Inserted() int }).Inserted()
		})
	}
	wg.Wait()
	if total != 1 || failed != 0 {
		t.Fatalf("%d imports reported inserting the record (%d failed), want exactly 1", total, failed)
	}
}
