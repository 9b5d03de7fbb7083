#!/bin/sh
# The whole `gavel exec --lang python` (gavel's start, the sandbox, the
# program, the result) on a trivial program and on HumanEval/0 with its
# tests, gavel at HEAD against gavel at BASE (a git revision, default the
# one before issue 29), each with gavel-sandbox beside it, and the same
# program run bare (`python3 -I prog.py`); the three alternate RUNS times
# each, so a machine whose speed drifts slows them alike. Prints medians:
# the whole process, and the run inside it as gavel reports it; then
# gavel's own start (`gavel version`) for both (BENCHMARKS.md).
#
#   scripts/bench-sandbox.sh [BASE] [RUNS]
#
# Run as root for the full sandbox.
set -eu
base=${1:-bc06d2c^}
runs=${2:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$work/base-src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --detach "$work/base-src" "$base" >/dev/null 2>&1
mkdir "$work/base" "$work/head"
(cd "$work/base-src" && go build -o "$work/base/" ./cmd/gavel ./cmd/gavel-sandbox)
(cd "$here" && go build -o "$work/head/" ./cmd/gavel ./cmd/gavel-sandbox)
python3 - "$work" "$runs" "$here/examples/humaneval/HumanEval.jsonl.gz" <<'PY'
import gzip, json, statistics, subprocess, sys, time
work, runs, problems = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = json.loads(gzip.open(problems).readline())
programs = {
    "trivial": "pass\n",
    "HumanEval/0": p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n",
}
med = lambda xs: statistics.median(xs) * 1000
print("| program | bare python3 | whole gavel exec, before | whole, after | after / bare | run inside, before | run inside, after |")
print("|---|---|---|---|---|---|---|")
iso = None
for name, src in programs.items():
    path = f"{work}/prog.py"
    open(path, "w").write(src)
    bare, whole, inner = [], {"base": [], "head": []}, {"base": [], "head": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["/usr/bin/python3", "-I", path], check=True, capture_output=True)
        bare.append(time.perf_counter() - t0)
        for b in ("base", "head"):
            t0 = time.perf_counter()
            out = subprocess.run([f"{work}/{b}/gavel", "exec", "--lang", "python", path], check=True, capture_output=True)
            whole[b].append(time.perf_counter() - t0)
            r = json.loads(out.stdout)
            if r["status"] != "passed":
                sys.exit(f"{b}: {r}")
            inner[b].append(r["run"]["wall_ns"] / 1e9)
            if b == "head":
                iso = r["run"]["isolation"]
    print(f"| {name} | {med(bare):.1f} ms | {med(whole['base']):.1f} ms ({med(whole['base']) / med(bare):.2f}x) | {med(whole['head']):.1f} ms | "
          f"{med(whole['head']) / med(bare):.2f}x | {med(inner['base']):.1f} ms | {med(inner['head']):.1f} ms |")
start = {"base": [], "head": []}
for _ in range(runs):
    for b in ("base", "head"):
        t0 = time.perf_counter()
        subprocess.run([f"{work}/{b}/gavel", "version"], check=True, capture_output=True)
        start[b].append(time.perf_counter() - t0)
print(f"\ngavel's own start (gavel version): before {med(start['base']):.1f} ms, after {med(start['head']):.1f} ms")
print("isolation after:", json.dumps(iso))
PY
