#!/bin/sh
# Times the commands that read 10,000 records' worth of figures, gavel at
# HEAD against gavel at BASE (a git revision, default the one before issue
# 29's work), alternating the two binaries RUNS times (BENCHMARKS.md):
#   - a cached rerun of `gavel judge` over 9,918 records (world 2's train
#     part of 10,000 simulated records, the cache filled by a first run);
#   - `gavel eval` over the same cached verdicts;
#   - `gavel agreement` on a 10,000-row table with 10,000 resamples.
# Each binary keeps its own copy of the store (a newer gavel migrates it).
# Prints the median wall time and peak memory of each, and the records a
# second of the judge rerun.
#
#   scripts/bench-figures.sh [BASE] [RUNS]
set -eu
base=${1:-bc06d2c^}
runs=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$work/base-src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --detach "$work/base-src" "$base" >/dev/null 2>&1
(cd "$work/base-src" && go build -o "$work/base" ./cmd/gavel)
(cd "$here" && go build -o "$work/head" ./cmd/gavel)
G=$work/head
$G sim records --n 10000 --seed 2 -o "$work/records.jsonl" >/dev/null 2>&1
for b in base head; do
	"$work/$b" --db "$work/$b.db" ingest "$work/records.jsonl" >/dev/null 2>&1
	"$work/$b" --db "$work/$b.db" split main --train 1 --val 0 --test 0 --exclude-status draft >/dev/null 2>&1
	"$work/$b" --db "$work/$b.db" judge --judge passfail --split main:train --model sim --json >/dev/null 2>&1
done
python3 - "$work/table.csv" <<'PY'
import random, sys
r = random.Random(1)
with open(sys.argv[1], "w") as f:
    f.write("a,b,g\n")
    for i in range(10000):
        a = r.choice(["pass", "fail"])
        b = a if r.random() < 0.8 else r.choice(["pass", "fail"])
        f.write(f"{a},{b},g{i // 3}\n")
PY
python3 - "$work" "$runs" <<'PY'
import json, statistics, subprocess, sys
work, runs = sys.argv[1], int(sys.argv[2])
cmds = {
    "judge, cached rerun": lambda b: [f"{work}/{b}", "--db", f"{work}/{b}.db", "judge", "--judge", "passfail", "--split", "main:train", "--model", "sim", "--json"],
    "eval, cached verdicts": lambda b: [f"{work}/{b}", "--db", f"{work}/{b}.db", "eval", "--judge", "passfail", "--split", "main:train", "--model", "sim", "--json"],
    "agreement 10k x 10k": lambda b: [f"{work}/{b}", "agreement", f"{work}/table.csv", "--a", "a", "--b", "b", "--json"],
}
print("| command | before (BASE) | after (HEAD) | speed-up | peak memory before, after |")
print("|---|---|---|---|---|")
for name, cmd in cmds.items():
    wall = {"base": [], "head": []}
    mem = {"base": [], "head": []}
    out = {}
    for _ in range(runs):
        for b in ("base", "head"):
            r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd(b), capture_output=True, text=True, check=True)
            t, m = r.stderr.strip().splitlines()[-1].split()
            wall[b].append(float(t)); mem[b].append(int(m) / 1024)
            out[b] = r.stdout
    extra = ""
    if name.startswith("judge"):
        n = json.loads(out["head"])["records"]
        extra = f" ({n / statistics.median(wall['base']):,.0f} -> {n / statistics.median(wall['head']):,.0f} records/s)"
    if name.startswith("agreement") and out["base"] != out["head"]:
        sys.exit("agreement: the figures differ between the two binaries")
    mb, mh = statistics.median(wall["base"]), statistics.median(wall["head"])
    print(f"| {name} | {mb:.2f} s | {mh:.2f} s | {mb / mh:.1f}x{extra} | {statistics.median(mem['base']):.0f} MB, {statistics.median(mem['head']):.0f} MB |")
PY
