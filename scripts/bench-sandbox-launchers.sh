#!/bin/sh
# Times 'gavel exec --lang python' on a trivial program and on HumanEval/0
# with its tests, with gavel's own binary as the sandbox launcher (gavel
# installed alone) and with gavel-sandbox beside it, against the same
# program run bare ('python3 -I prog.py'); the three run in turn, RUNS
# times each, so a machine whose speed drifts slows them alike. Prints the
# median wall time of each and the sandboxed runs' median CPU (launcher
# and program, as gavel reports it) (BENCHMARKS.md).
#
#   scripts/bench-sandbox-launchers.sh [RUNS]
#
# Run as root for the full sandbox (namespaces, nobody, a pids cgroup).
set -eu
runs=${1:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/alone" "$work/beside"
go build -o "$work/alone/" "$here/cmd/gavel"
go build -o "$work/beside/" "$here/cmd/gavel" "$here/cmd/gavel-sandbox"
python3 - "$work" "$runs" "$here/examples/humaneval/HumanEval.jsonl.gz" <<'PY'
import gzip, json, statistics, subprocess, sys, time
work, runs, problems = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = json.loads(gzip.open(problems).readline())
programs = {
    "trivial": "pass\n",
    "HumanEval/0": p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n",
}
python = "/usr/bin/python3"
for name, src in programs.items():
    path = f"{work}/prog.py"
    open(path, "w").write(src)
    wall = {"bare": [], "alone": [], "beside": []}
    cpu = {"alone": [], "beside": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([python, "-I", path], check=True, capture_output=True)
        wall["bare"].append(time.perf_counter() - t0)
        for how in ("alone", "beside"):
            t0 = time.perf_counter()
            out = subprocess.run([f"{work}/{how}/gavel", "exec", "--lang", "python", path], check=True, capture_output=True)
            r = json.loads(out.stdout)
            if r["status"] != "passed":
                sys.exit(f"{how}: {r}")
            wall[how].append(r["run"]["wall_ns"] / 1e9)
            cpu[how].append(r["run"]["cpu_ns"] / 1e9)
    med = lambda xs: statistics.median(xs) * 1000
    print(f"{name}: bare {med(wall['bare']):.1f} ms")
    for how, label in (("alone", "gavel as its own launcher"), ("beside", "gavel-sandbox beside gavel")):
        print(f"  {label}: {med(wall[how]):.1f} ms ({med(wall[how]) / med(wall['bare']):.2f}x bare), CPU {med(cpu[how]):.1f} ms")
PY
