package main_test

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWorker starts 'gavel worker' on a store; it is stopped at the end
// of the test (or earlier with stop).
func startWorker(t *testing.T, db string) (stop func(sig syscall.Signal), stderr *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(gavelBin, "--db", db, "worker", "--jobs", "1")
	cmd.Env = append(os.Environ(), "GAVEL_DB=")
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func(sig syscall.Signal) {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(sig)
		cmd.Wait()
	}
	t.Cleanup(func() { stop(syscall.SIGTERM) })
	return stop, stderr
}

// A benchmark build spread over two workers through the queue on
// PostgreSQL, one of them stopped part-way: the units it had in hand run
// again elsewhere, nothing is run twice that finished, and the benchmark is
// the one a single process builds.
func TestBenchBuildThroughQueue(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed")
	}
	db := pgStore(t)
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"bench", "build", "--problems", "../../examples/humaneval/HumanEval.jsonl.gz", "--lang", "python",
			"--limit", "8", "--seed", "3", "--program-timeout", "10s", "-o", out, "--json", "--jobs", "1"}
	}
	// The reference: one process, its own SQLite store.
	ref := filepath.Join(dir, "ref.jsonl")
	mustGavel(t, filepath.Join(dir, "ref.db"), args(ref)...)

	mustGavel(t, db, "records", "stats") // creates the schema
	stop1, _ := startWorker(t, db)
	startWorker(t, db)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		stop1(syscall.SIGTERM) // mid-run: its unit in hand is cancelled and retried
	}()
	out := filepath.Join(dir, "queued.jsonl")
	var sum struct {
		Candidates int `json:"candidates"`
		Cached     int `json:"cached_runs"`
	}
	decodeJSON(t, mustGavel(t, db, append(args(out), "--queue")...), &sum)
	if sum.Candidates == 0 || sum.Cached != sum.Candidates {
		t.Fatalf("after the queue, the build ran %d of %d candidates itself", sum.Candidates-sum.Cached, sum.Candidates)
	}
	a, _ := os.ReadFile(ref)
	b, _ := os.ReadFile(out)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("the benchmark built through the queue differs from the one built by one process")
	}
	// Every unit completed, and more than one process worked them.
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT state, attempted_by FROM river_job`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	clients := map[string]bool{}
	n := 0
	for rows.Next() {
		var state, by string
		if err := rows.Scan(&state, &by); err != nil {
			t.Fatal(err)
		}
		if state != "completed" {
			t.Fatalf("a unit ended %s", state)
		}
		for _, c := range strings.Split(strings.Trim(by, "{}"), ",") {
			clients[c] = true
		}
		n++
	}
	if n != 8 || len(clients) < 2 {
		t.Fatalf("%d units, worked by %d processes", n, len(clients))
	}
	// Built again through the queue: the units are done already.
	var again struct {
		Cached     int `json:"cached_runs"`
		Candidates int `json:"candidates"`
	}
	decodeJSON(t, mustGavel(t, db, append(args(filepath.Join(dir, "again.jsonl")), "--queue")...), &again)
	if again.Cached != again.Candidates {
		t.Fatalf("second build: %+v", again)
	}
}
