package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/store/sqldb"
	"github.com/gavelhq/gavel/store/sqlite"
)

// Commands that open a new store at the same moment all succeed (issue
// 13, defect 3: the busy timeout is set before WAL is switched on).
func testConcurrentOpensOfANewStore(t *testing.T) {
	for round := range 10 {
		path := freshStore(t)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Go(func() {
				db, err := openStore(context.Background(), path)
				if err == nil {
					_, err = db.SchemaVersion(context.Background())
					db.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

func numbered(i int) *record.Record {
	r := &record.Record{ID: fmt.Sprintf("r%05d", i), Task: "t", Candidate: "c", Outcome: record.Outcome{Status: record.StatusPassed}}
	if err := r.Normalize(); err != nil {
		panic(err)
	}
	return r
}

func count(t *testing.T, db *sqldb.DB) int {
	n := 0
	if err := db.Records(context.Background(), record.Filter{}, func(*record.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A long import beside a command that stores paid answers: no answer is
// lost to the lock, even when the import takes far longer than one
// statement waits; the import stays all or nothing (issue 13, defect 3).
func testLongImportLosesNoCacheWrite(t *testing.T) { bothWays(t, longImportLosesNoCacheWrite) }

func longImportLosesNoCacheWrite(t *testing.T) {
	defer sqlite.SetBusyTimeout(sqlite.SetBusyTimeout(50 * time.Millisecond))
	ctx := context.Background()
	path := freshStore(t)
	importer, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer importer.Close()
	writer, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	const n = 3000
	var wg sync.WaitGroup
	var importErr error
	started := make(chan struct{})
	var once sync.Once
	wg.Go(func() {
		// An import that fails at once must not leave the test waiting.
		defer once.Do(func() { close(started) })
		importErr = importer.Import(ctx, func(w record.Writer) error {
			for i := range n {
				if i == 1 {
					once.Do(func() { close(started) })
				}
				if i%100 == 0 {
					time.Sleep(10 * time.Millisecond) // ~300 ms in all: six busy timeouts
				}
				if _, err := w.Put(ctx, numbered(i)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	<-started
	cache := writer.Cache()
	for i := range 40 {
		e := &llm.Entry{Key: fmt.Sprintf("key-%d", i), Provider: "openai", Model: "openai:m",
			Request: &llm.Request{Model: "openai:m"}, Response: &llm.Response{Text: "paid"}}
		if err := cache.Put(ctx, e); err != nil {
			t.Fatalf("answer %d lost to the import's lock: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if importErr != nil {
		t.Fatal(importErr)
	}
	if got := count(t, writer); got != n {
		t.Fatalf("%d records after the import, want %d", got, n)
	}
	st, err := cache.Stats(ctx)
	if err != nil || st.Entries != 40 {
		t.Fatalf("cache: %+v %v", st, err)
	}

	// An import that fails after staging several batches imports nothing.
	boom := errors.New("line 2101: bad record")
	err = importer.Import(ctx, func(w record.Writer) error {
		for i := n; i < n+2100; i++ {
			if _, err := w.Put(ctx, numbered(i)); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed import: %v", err)
	}
	if got := count(t, writer); got != n {
		t.Fatalf("a failed import left %d records, want the %d from before", got, n)
	}
	// Re-importing the same records is a no-op; a changed one is refused
	// with the fields that differ, within one import and against the store.
	err = importer.Import(ctx, func(w record.Writer) error {
		if res, err := w.Put(ctx, numbered(7)); err != nil || res != record.Unchanged {
			return fmt.Errorf("same record again: %v %v", res, err)
		}
		a, b := numbered(n+1), numbered(n+1)
		b.Task = "other"
		if _, err := w.Put(ctx, a); err != nil {
			return err
		}
		if _, err := w.Put(ctx, b); !errors.Is(err, record.ErrConflict) {
			return fmt.Errorf("a changed record within one import: %v", err)
		}
		c := numbered(8)
		c.Task = "changed"
		if _, err := w.Put(ctx, c); !errors.Is(err, record.ErrConflict) {
			return fmt.Errorf("a changed record against the store: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, writer); got != n+1 {
		t.Fatalf("%d records, want %d", got, n+1)
	}
}

// A record that another command imported while this import was staging
// is left alone when it is the same, and fails this import (which then
// imports nothing) when it differs.
func testImportMeetsAConcurrentImport(t *testing.T) { bothWays(t, importMeetsAConcurrentImport) }

func importMeetsAConcurrentImport(t *testing.T) {
	ctx := context.Background()
	path := freshStore(t)
	a, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	other := func(r *record.Record) {
		t.Helper()
		if err := b.Import(ctx, func(w record.Writer) error { _, err := w.Put(ctx, r); return err }); err != nil {
			t.Fatal(err)
		}
	}
	// The same record meanwhile: fine.
	err = a.Import(ctx, func(w record.Writer) error {
		for i := range 3 {
			if _, err := w.Put(ctx, numbered(i)); err != nil {
				return err
			}
		}
		other(numbered(1))
		return nil
	})
	if err != nil || count(t, a) != 3 {
		t.Fatalf("same record meanwhile: %v, %d records", err, count(t, a))
	}
	// A different record under an id this import staged: refused, and
	// nothing of this import is kept.
	err = a.Import(ctx, func(w record.Writer) error {
		for i := 10; i < 13; i++ {
			if _, err := w.Put(ctx, numbered(i)); err != nil {
				return err
			}
		}
		changed := numbered(11)
		changed.Task = "someone else's"
		other(changed)
		return nil
	})
	if !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a different record meanwhile: %v", err)
	}
	if got := count(t, a); got != 4 { // the 3 from before and the other command's
		t.Fatalf("%d records, want 4", got)
	}
}

// bothWays runs an import test with the records held in memory until the
// move, and with every record staged in the temporary table.
func bothWays(t *testing.T, test func(*testing.T)) {
	t.Run("in memory", test)
	t.Run("staged", func(t *testing.T) {
		defer setImportLimit(setImportLimit(0))
		test(t)
	})
}
