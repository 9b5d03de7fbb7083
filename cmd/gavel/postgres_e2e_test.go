package main_test

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/pgtest"
	"github.com/gavelhq/gavel/llm/llmtest"
)

// pgStore names a fresh, empty PostgreSQL store; without a test database
// the test is skipped, or fails under CI.
func pgStore(t *testing.T) string {
	t.Helper()
	if !pgtest.Available(t) {
		t.Skip("GAVEL_TEST_POSTGRES is not set")
	}
	return pgtest.Fresh(t)
}

// answers counts what a fake server answered, by request body, with the
// time of each answer.
type answers struct {
	mu sync.Mutex
	at map[[32]byte][]time.Time
}

// counts is how often each body was answered.
func (a *answers) counts() map[[32]byte]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := map[[32]byte]int{}
	for h, ts := range a.at {
		n[h] = len(ts)
	}
	return n
}

// times is when each body was answered.
func (a *answers) times() map[[32]byte][]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.at)
}

func (a *answers) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.at)
}

// simServer is a fake OpenAI server that answers as the simulated world
// and counts what it answers; it is closed when the test ends.
func simServer(t *testing.T) (*llmtest.Server, *answers) {
	fake := llmtest.NewOpenAI()
	t.Cleanup(fake.Close)
	answer := simAnswer(t)
	a := &answers{at: map[[32]byte][]time.Time{}}
	fake.Answer = func(c *llmtest.Call) string {
		h := sha256.Sum256(c.Body)
		a.mu.Lock()
		a.at[h] = append(a.at[h], time.Now())
		a.mu.Unlock()
		return answer(c)
	}
	return fake, a
}

// Two calibrations of the same judge on the same split, run at once by two
// processes on one PostgreSQL store: every distinct request reaches the
// provider once (issue 15; two processes on one store used to send 1,017
// requests for 592 distinct ones), and both reach the same result.
func TestTwoCalibrationsShareOnePostgresStore(t *testing.T) {
	db := pgStore(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "world.jsonl")
	mustGavel(t, db, "sim", "records", "--n", "240", "--seed", "4", "-o", world)
	mustGavel(t, db, "ingest", world)
	mustGavel(t, db, "split", "main", "--exclude-status", "draft")

	fake, bodies := simServer(t)
	fake.Latency = 5 * time.Millisecond
	args := []string{"--db", db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge",
		"--base-url", fake.URL + "/v1", "--max-iter", "2", "--concurrency", "4", "--resamples", "200", "--json"}
	outs := make([]bytes.Buffer, 2)
	errs := make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	runErr := make([]error, 2)
	for i := range 2 {
		cmd := exec.Command(gavelBin, args...)
		cmd.Env = append(os.Environ(), "GAVEL_DB=")
		cmd.Stdout, cmd.Stderr = &outs[i], &errs[i]
		wg.Go(func() { runErr[i] = cmd.Run() })
	}
	wg.Wait()
	for i := range 2 {
		if runErr[i] != nil {
			t.Fatalf("calibration %d: %v\n%s", i, runErr[i], errs[i].String())
		}
	}
	var a, b calibrateJSON
	decodeJSON(t, outs[0].String(), &a)
	decodeJSON(t, outs[1].String(), &b)
	if len(a.Judges) != 1 || len(b.Judges) != 1 || a.Judges[0].SelectedVersion != b.Judges[0].SelectedVersion {
		t.Fatalf("the two calibrations differ:\n%s\n%s", outs[0].String(), outs[1].String())
	}
	seen := bodies.counts()
	dup := 0
	for _, n := range seen {
		if n > 1 {
			dup += n - 1
		}
	}
	if dup > 0 || fake.Count() != len(seen) || len(seen) < 100 {
		t.Fatalf("%d calls for %d distinct requests (%d duplicates)", fake.Count(), len(seen), dup)
	}
	t.Logf("%d distinct requests, each sent once, for two calibrations", len(seen))
}

// gavel db copy moves a store to PostgreSQL and back; the commands read
// the same records from each.
func TestDBCopy(t *testing.T) {
	pg := pgStore(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	mustGavel(t, src, "sim", "records", "--n", "50", "--seed", "2", "-o", filepath.Join(dir, "w.jsonl"))
	mustGavel(t, src, "ingest", filepath.Join(dir, "w.jsonl"))
	mustGavel(t, src, "split", "main")
	r := gavel(t, src, "db", "copy", "--from", src, "--to", pg)
	if r.code != 0 || !bytes.Contains([]byte(r.stderr), []byte("copied 50 rows of records")) {
		t.Fatalf("copy to PostgreSQL: %+v", r)
	}
	if r := gavel(t, src, "db", "copy", "--from", src, "--to", pg); r.code == 0 {
		t.Fatalf("a second copy into the same store: %+v", r)
	}
	back := filepath.Join(dir, "back.db")
	mustGavel(t, src, "db", "copy", "--from", pg, "--to", back)
	for _, db := range []string{src, pg, back} {
		var s stats
		decodeJSON(t, mustGavel(t, db, "records", "stats", "--json"), &s)
		if s.Total != 50 {
			t.Fatalf("%s: %+v", db, s)
		}
	}
	if a, b := mustGavel(t, src, "split", "show", "main"), mustGavel(t, back, "split", "show", "main"); a != b {
		t.Fatalf("the split changed on the way:\n%s\n%s", a, b)
	}
}
