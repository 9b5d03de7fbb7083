#!/bin/sh
# Where the time of one `gavel exec --lang python` goes: the same program
# (trivial, and HumanEval/0 with its tests) run
#   - bare (`python3 -I prog.py`);
#   - under the same isolation done in C with nothing else
#     (scripts/sandbox-floor.c): what the isolation itself costs;
#   - by a small Go binary that runs gavel's exec code (package
#     bench/exec/early) and nothing else: what gavel's sandbox code costs;
#   - by gavel built without cgo, and by gavel as `go build` makes it: what
#     gavel's binary costs to start;
# all alternating RUNS times, medians. Then what it costs a binary to reach
# its first package's init (the launcher's, which exits at once on a bad
# configuration): the spawn itself (/bin/true), the small binary, gavel.
# With perf installed, then also each way's CPU time and page faults
# (`perf stat`, the trivial program), and the milestones of one run of the
# small binary and of the C floor from kernel tracepoints (process starts,
# the namespace clone, the program's exec and exit, the launcher's exit, the
# parent's wait returning), which cost far less than strace.
# BENCHMARKS.md says what the rows mean. Run as root, with cc.
#
#   scripts/bench-sandbox-parts.sh [RUNS]
set -eu
runs=${1:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --detach "$work/src" HEAD >/dev/null 2>&1
mkdir -p "$work/src/cmd/gavel-exec-probe" "$work/probe" "$work/gavel" "$work/nocgo"
cat >"$work/src/cmd/gavel-exec-probe/main.go" <<'GO'
// Command gavel-exec-probe runs `exec --lang python FILE` as gavel's early
// path does, in a binary with nothing else in it (bench-sandbox-parts.sh).
package main

import (
	"os"

	"github.com/gavelhq/gavel/bench/exec/early"
)

func main() {
	code, ok := early.Run(os.Args[1:], os.Stdout, os.Stderr)
	if !ok {
		os.Exit(99)
	}
	os.Exit(code)
}
GO
(cd "$work/src" && go build -o "$work/probe/" ./cmd/gavel-exec-probe ./cmd/gavel-sandbox &&
	go build -o "$work/gavel/" ./cmd/gavel ./cmd/gavel-sandbox &&
	CGO_ENABLED=0 go build -o "$work/nocgo/" ./cmd/gavel ./cmd/gavel-sandbox)
cc -O2 -o "$work/floor" "$here/scripts/sandbox-floor.c"
python3 - "$work" "$runs" "$here/examples/humaneval/HumanEval.jsonl.gz" <<'PY'
import gzip, json, os, statistics, subprocess, sys, time
work, runs, problems = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = json.loads(gzip.open(problems).readline())
programs = {
    "trivial": "pass\n",
    "HumanEval/0": p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n",
}
med = lambda xs: statistics.median(xs) * 1000
path = f"{work}/prog.py"
ways = {
    "bare python3": ["/usr/bin/python3", "-I", path],
    "the isolation alone, in C": [f"{work}/floor", path],
    "gavel's exec code in a small binary": [f"{work}/probe/gavel-exec-probe", "exec", "--lang", "python", path],
    "gavel, CGO_ENABLED=0": [f"{work}/nocgo/gavel", "exec", "--lang", "python", path],
    "gavel (go build)": [f"{work}/gavel/gavel", "exec", "--lang", "python", path],
}
print("| way | " + " | ".join(programs) + " |")
print("|---|" + "---|" * len(programs))
rows = {w: [] for w in ways}
for name, src in programs.items():
    open(path, "w").write(src)
    t = {w: [] for w in ways}
    for _ in range(runs):
        for w, cmd in ways.items():
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True)
            t[w].append(time.perf_counter() - t0)
            if r.returncode != 0 or (cmd[1:2] == ["exec"] and json.loads(r.stdout)["status"] != "passed"):
                sys.exit(f"{w} on {name}: exit {r.returncode}: {r.stdout[-300:]!r} {r.stderr[-300:]!r}")
    bare = med(t["bare python3"])
    for w in ways:
        m = med(t[w])
        rows[w].append(f"{m:.1f} ms" + ("" if w == "bare python3" else f" ({m / bare:.2f}x)"))
for w in ways:
    print(f"| {w} | " + " | ".join(rows[w]) + " |")
env = dict(os.environ, GAVEL_SANDBOX_LAUNCH="x")
starts = {"spawn only (/bin/true)": ["/bin/true"], "small binary": [f"{work}/probe/gavel-exec-probe"],
          "gavel, CGO_ENABLED=0": [f"{work}/nocgo/gavel"], "gavel (go build)": [f"{work}/gavel/gavel"]}
t = {w: [] for w in starts}
for _ in range(runs):
    for w, cmd in starts.items():
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env)
        t[w].append(time.perf_counter() - t0)
print("\nto the first package's init and out: " + ", ".join(f"{w} {med(v):.1f} ms" for w, v in t.items()))
PY
command -v perf >/dev/null 2>&1 || exit 0
printf 'pass\n' >"$work/prog.py"
echo
echo "CPU time and page faults a run, trivial program (perf stat -r $runs):"
for way in "bare python3:/usr/bin/python3 -I" "the isolation alone, in C:$work/floor" \
	"gavel's exec code in a small binary:$work/probe/gavel-exec-probe exec --lang python" \
	"gavel, CGO_ENABLED=0:$work/nocgo/gavel exec --lang python" "gavel (go build):$work/gavel/gavel exec --lang python"; do
	# shellcheck disable=SC2086 # the command's words
	perf stat -x, -r "$runs" -e task-clock,page-faults ${way#*:} "$work/prog.py" 2>&1 >/dev/null |
		awk -F, -v w="${way%%:*}" '$3 == "task-clock" {c = $1} $3 == "page-faults" {f = $1} END {printf "  %s: %.1f ms CPU, %d page faults\n", w, c, f}'
done
milestones() {
	perf record -q -o "$work/perf.data" -e sched:sched_process_exec,sched:sched_process_exit,syscalls:sys_enter_clone,syscalls:sys_enter_exit_group,syscalls:sys_exit_waitid,syscalls:sys_exit_wait4 -- "$@" >/dev/null 2>&1 ||
		{ echo "  (perf record failed: tracepoints need root or perf_event_paranoid -1)"; return 0; }
	perf script -i "$work/perf.data" -F comm,tid,time,event,trace 2>/dev/null | python3 -c '
import sys
t0, out = None, []
for line in sys.stdin:
    f = line.split(None, 4)
    if len(f) < 4:
        continue
    comm, t, ev, rest = f[0], float(f[2].rstrip(":")), f[3].rstrip(":"), (f[4] if len(f) > 4 else "")
    t0 = t if t0 is None else t0
    ms = (t - t0) * 1000
    if ev == "sched:sched_process_exec":
        out.append("%.1f exec %s" % (ms, rest.split()[0].split("/")[-1]))
    elif ev == "syscalls:sys_enter_clone" and "0x68" in rest.split(",")[0]:
        out.append("%.1f namespace clone" % ms)
    elif ev == "syscalls:sys_enter_exit_group":
        out.append("%.1f %s exits" % (ms, comm))
    elif ev.startswith("syscalls:sys_exit_wait") and not rest.strip().startswith("0xf"):
        out.append("%.1f %s waited" % (ms, comm))
print("  " + "; ".join(out))
'
}
echo "milestones of one run (ms from the first exec):"
echo " the small binary:"
milestones "$work/probe/gavel-exec-probe" exec --lang python "$work/prog.py"
echo " the C floor:"
milestones "$work/floor" "$work/prog.py"
