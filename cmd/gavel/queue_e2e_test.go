package main_test

import (
	"bytes"
	"database/sql"
	"fmt"
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

// goWrapper writes a 'go' command that logs, after the real toolchain,
// each program in each test binary it built (a failed build, which runs
// nothing, is not logged; gavel builds the rest again without the program
// the compiler blamed): the
// process that asked, the build (the wrapper's own pid), and a hash of the
// program's file (a problem's candidates share a binary, each in a file of
// its own with its names renamed apart by a suffix, which the hash leaves
// out). It is an outside count of the programs gavel compiles and runs,
// whichever process runs them.
func goWrapper(t *testing.T, dir string) (binDir, log string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the Go toolchain is needed")
	}
	binDir, log = filepath.Join(dir, "bin"), filepath.Join(dir, "compiles.log")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = test ] && [ "$2" = -c ]; then
	hashes=""
	if ls "$5"/c[0-9]*_test.go >/dev/null 2>&1; then
		for f in "$5"/*.go; do
			hashes="$hashes $(sed 's/_gv[0-9]*//g' "$f" | sha256sum | cut -c1-16)"
		done
	else
		hashes=$(cat "$5"/*.go | sha256sum | cut -c1-16)
	fi
	%[2]q "$@"
	rc=$?
	if [ $rc = 0 ]; then
		for h in $hashes; do echo "$PPID $$ $h" >> %[1]q; done
	fi
	exit $rc
fi
exec %[2]q "$@"
`, log, real)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return binDir, log
}

// queueProc is a gavel process of the queue test.
type queueProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startGavel(t *testing.T, env []string, args ...string) *queueProc {
	t.Helper()
	p := &queueProc{cmd: exec.Command(gavelBin, args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.cmd.Wait()
		}
	})
	return p
}

// killWhenHolding SIGKILLs a worker once it is working a unit of kind and
// at least after units of that kind have completed; it returns when.
func killWhenHolding(t *testing.T, conn *sql.DB, w *queueProc, kind string, after int) time.Time {
	t.Helper()
	pid := fmt.Sprint(w.cmd.Process.Pid)
	for range 3000 {
		var holding, done int
		err := conn.QueryRow(`SELECT count(*) FILTER (WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] LIKE '%\_' || $2 || '\_%'),
			count(*) FILTER (WHERE state = 'completed') FROM river_job WHERE kind = $1`, kind, pid).Scan(&holding, &done)
		if err != nil && !strings.Contains(err.Error(), "does not exist") { // the queue's tables come with the first process
			t.Fatal(err)
		}
		if holding > 0 && done >= after {
			if err := w.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			at := time.Now()
			w.cmd.Wait()
			return at
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("worker %s never held a %s unit", pid, kind)
	return time.Time{}
}

// The test: two workers, a benchmark build of 20 Go problems and an
// ACR round of 20 instructions through the queue on PostgreSQL, one worker
// killed (SIGKILL) in the middle of each: the outputs are those of one
// process alone, no program that finished is compiled and run again (only
// the one the dead worker had in hand), and no model request answered
// before the kill is sent again.
func TestQueueSurvivesKilledWorkers(t *testing.T) {
	db := pgStore(t)
	dir := t.TempDir()
	binDir, compiles := goWrapper(t, dir)

	fake, bodies := simServer(t)
	fake.Latency = 10 * time.Millisecond
	const goProblems = "../../examples/humaneval-x-go/humaneval_go.jsonl.gz"
	benchArgs := func(out string) []string {
		return []string{"bench", "build", "--problems", goProblems, "--lang", "go", "--limit", "20", "--candidates", "1",
			"--seed", "5", "--program-timeout", "20s", "-o", out, "--json", "--jobs", "1"}
	}
	acrArgs := func(out string) []string {
		return []string{"acr", "--instructions", goProblems, "--format", "humaneval-x-go", "--limit", "20", "--n", "3",
			"--generator", "openai:gen", "--judge-model", "openai:judge", "--critic-model", "openai:critic",
			"--base-url", fake.URL + "/v1", "--jobs", "1", "--program-timeout", "20s", "--sim-on-real", "-o", out, "--json"}
	}
	keys := []string{"OPENAI_API_KEY=test-key", "GAVEL_DB="}

	// The reference: one process, its own SQLite store, the real toolchain.
	ref := filepath.Join(dir, "ref.db")
	mustGavel(t, ref, benchArgs(filepath.Join(dir, "ref-bench.jsonl"))...)
	mustGavel(t, ref, acrArgs(filepath.Join(dir, "ref-round.jsonl"))...)
	refCalls := bodies.counts() // a body can be sent more than once: the n samples of an instruction
	bodies.reset()

	// Through the queue: two workers, compiling through the wrapper.
	mustGavel(t, db, "records", "stats") // creates the schema
	env := append([]string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")}, keys...)
	worker := func() *queueProc { return startGavel(t, env, "--db", db, "worker", "--jobs", "1") }
	w1, w2 := worker(), worker()
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	bench := startGavel(t, env, append([]string{"--db", db}, append(benchArgs(filepath.Join(dir, "q-bench.jsonl")), "--queue")...)...)
	killWhenHolding(t, conn, w1, "gavel_bench_problem", 2)
	if err := bench.cmd.Wait(); err != nil {
		t.Fatalf("bench build --queue: %v\n%s", err, bench.stderr.String())
	}
	w3 := worker() // a machine joins
	round := startGavel(t, env, append([]string{"--db", db}, append(acrArgs(filepath.Join(dir, "q-round.jsonl")), "--queue")...)...)
	killedAt := killWhenHolding(t, conn, w2, "gavel_acr_instruction", 3)
	if err := round.cmd.Wait(); err != nil {
		t.Fatalf("acr --queue: %v\n%s", err, round.stderr.String())
	}

	// The same outputs as one process alone.
	for _, pair := range [][2]string{{"ref-bench.jsonl", "q-bench.jsonl"}, {"ref-round.jsonl", "q-round.jsonl"},
		{"ref-round.lineage.jsonl", "q-round.lineage.jsonl"}} {
		a, _ := os.ReadFile(filepath.Join(dir, pair[0]))
		b, _ := os.ReadFile(filepath.Join(dir, pair[1]))
		if len(a) == 0 || !bytes.Equal(a, b) {
			al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
			for i := range min(len(al), len(bl)) {
				if al[i] != bl[i] {
					t.Errorf("line %d:\n%.2000s\n%.2000s", i+1, al[i], bl[i])
					break
				}
			}
			t.Fatalf("%s differs from %s, built by one process (%d, %d lines)", pair[1], pair[0], len(al), len(bl))
		}
	}
	// The commands' own passes ran nothing and sent nothing.
	var bsum struct {
		Candidates int `json:"candidates"`
		Cached     int `json:"cached_runs"`
	}
	decodeJSON(t, bench.stdout.String(), &bsum)
	var asum acrJSON
	decodeJSON(t, round.stdout.String(), &asum)
	if bsum.Candidates == 0 || bsum.Cached != bsum.Candidates || asum.Calls.Sent != 0 || asum.Stats.Instructions != 20 {
		t.Fatalf("after the queue, the commands themselves: bench %+v, acr calls %+v", bsum, asum.Calls)
	}

	// Every unit completed; the dead workers' units were handed on, and
	// three processes at least did the work.
	rows, err := conn.Query(`SELECT kind, state, attempted_by, coalesce(errors::text, '') FROM river_job`)
	if err != nil {
		t.Fatal(err)
	}
	units, handedOn := map[string]int{}, 0
	pids := map[string]bool{}
	for rows.Next() {
		var kind, state, by, errs string
		if err := rows.Scan(&kind, &state, &by, &errs); err != nil {
			t.Fatal(err)
		}
		if state != "completed" {
			t.Fatalf("a %s unit ended %s: %s", kind, state, errs)
		}
		units[kind]++
		if strings.Contains(errs, "died; handed on") {
			handedOn++
		}
		for _, c := range strings.Split(strings.Trim(by, "{}"), ",") {
			pids[strings.Split(c, "_")[2]] = true
		}
	}
	rows.Close()
	if units["gavel_bench_problem"] != 20 || units["gavel_acr_instruction"] != 20 || handedOn < 2 || len(pids) < 3 {
		t.Fatalf("units %v, %d handed on after a kill, worked by %d processes", units, handedOn, len(pids))
	}

	// Programs: each compiled once, but for those a killed worker had in
	// hand (in the last binary it had built) when it died.
	data, err := os.ReadFile(compiles)
	if err != nil {
		t.Fatal(err)
	}
	lastBuild := map[string]string{} // process -> its last build
	type use struct{ pid, build string }
	var lines []struct {
		use
		h string
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] == "e3b0c44298fc1c14" { // sha256 of nothing
			t.Fatalf("the go wrapper logged %q", line)
		}
		lines = append(lines, struct {
			use
			h string
		}{use{f[0], f[1]}, f[2]})
		lastBuild[f[0]] = f[1]
	}
	killed := map[string]bool{fmt.Sprint(w1.cmd.Process.Pid): true, fmt.Sprint(w2.cmd.Process.Pid): true}
	t.Logf("processes: workers %d, %d (killed), %d; bench build %d; acr %d", w1.cmd.Process.Pid, w2.cmd.Process.Pid, w3.cmd.Process.Pid,
		bench.cmd.Process.Pid, round.cmd.Process.Pid)
	seen := map[string]use{} // program -> where it was first built
	repeats := 0
	for _, l := range lines {
		first, ok := seen[l.h]
		if !ok {
			seen[l.h] = l.use
			continue
		}
		repeats++
		if !killed[first.pid] || lastBuild[first.pid] != first.build {
			t.Errorf("program %s built again by process %s (build %s) after process %s had built it (build %s), and that process did not die with it in hand",
				l.h, l.pid, l.build, first.pid, first.build)
		}
	}
	if len(seen) < 100 {
		t.Fatalf("only %d programs compiled through the queue", len(seen))
	}
	// Model requests: each sent once, but for one in flight at the kill.
	answered := bodies.times()
	again := 0
	for h, times := range answered {
		if extra := len(times) - refCalls[h]; extra > 0 {
			// Sent more often than by one process: only a request in
			// flight when its worker died may be (answered at most 3 s
			// before the kill: the answer may not have been stored yet
			// on a loaded machine).
			inFlight := 0
			for _, at := range times {
				if at.After(killedAt.Add(-3*time.Second)) && at.Before(killedAt.Add(time.Second)) {
					inFlight++
				}
			}
			if inFlight < extra {
				t.Errorf("a request sent %d times (one process: %d), %d of them in flight at the kill at %s", len(times), refCalls[h], inFlight, killedAt.Format(time.StampMilli))
			}
			again += extra
		}
	}
	if len(answered) != len(refCalls) {
		t.Fatalf("%d distinct requests through the queue, %d in one process", len(answered), len(refCalls))
	}
	t.Logf("%d programs, %d compiled again (in hand at a kill); %d distinct requests, %d sent again (in flight at the kill); %d units handed on; a third worker %d joined",
		len(seen), repeats, len(answered), again, handedOn, w3.cmd.Process.Pid)
}

// A calibration through the queue: each stage's requests become units
// that a worker and the command share; the result is the one a calibration
// in one process reaches, and each distinct request reaches the provider
// once.
func TestCalibrateThroughQueue(t *testing.T) {
	db := pgStore(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "world.jsonl")
	ref := filepath.Join(dir, "ref.db")
	for _, store := range []string{ref, db} {
		mustGavel(t, store, "sim", "records", "--n", "120", "--seed", "6", "-o", world)
		mustGavel(t, store, "ingest", world)
		mustGavel(t, store, "split", "main", "--exclude-status", "draft")
	}
	fake, bodies := simServer(t)
	args := []string{"calibrate", "--judge", "passfail", "--split", "main", "--model", "openai:judge",
		"--base-url", fake.URL + "/v1", "--max-iter", "2", "--concurrency", "4", "--resamples", "200", "--json"}
	env := []string{"GAVEL_DB=", "OPENAI_API_KEY=test-key"}
	one := startGavel(t, env, append([]string{"--db", ref}, args...)...)
	if err := one.cmd.Wait(); err != nil {
		t.Fatalf("calibrate: %v\n%s", err, one.stderr.String())
	}
	refDistinct := len(bodies.counts())
	bodies.reset()

	mustGavel(t, db, "records", "stats")
	w := startGavel(t, env, "--db", db, "worker", "--jobs", "2")
	q := startGavel(t, env, append([]string{"--db", db}, append(args, "--queue")...)...)
	if err := q.cmd.Wait(); err != nil {
		t.Fatalf("calibrate --queue: %v\n%s", err, q.stderr.String())
	}
	var a, b calibrateJSON
	decodeJSON(t, one.stdout.String(), &a)
	decodeJSON(t, q.stdout.String(), &b)
	if len(a.Judges) != 1 || len(b.Judges) != 1 || a.Judges[0].SelectedVersion != b.Judges[0].SelectedVersion ||
		*a.Judges[0].Gain.ScottPi != *b.Judges[0].Gain.ScottPi {
		t.Fatalf("through the queue the calibration differs:\n%s\n%s", one.stdout.String(), q.stdout.String())
	}
	seen := bodies.counts()
	for _, n := range seen {
		if n > 1 {
			t.Fatalf("a request was sent %d times", n)
		}
	}
	if len(seen) != refDistinct || !strings.Contains(q.stderr.String(), "queue round") {
		t.Fatalf("%d distinct requests through the queue, %d in one process\n%s", len(seen), refDistinct, q.stderr.String())
	}
	// Units were worked by the worker as well as by the command.
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// (A unit is one request; a schema repair of its answer goes with it.)
	var units, byWorker int
	if err := conn.QueryRow(`SELECT count(*), count(*) FILTER (WHERE attempted_by[1] LIKE '%\_' || $1 || '\_%')
		FROM river_job WHERE kind = 'gavel_model_call' AND state = 'completed'`, fmt.Sprint(w.cmd.Process.Pid)).Scan(&units, &byWorker); err != nil {
		t.Fatal(err)
	}
	if units > refDistinct || units < refDistinct*9/10 || byWorker == 0 || byWorker == units {
		t.Fatalf("%d model-call units completed, %d by the worker, for %d requests", units, byWorker, refDistinct)
	}
}
