#!/usr/bin/env bash
# The selection study (issue 25): on the simulated world, over many
# worlds, how often does the version each selection rule picks lose on
# test, and what does each rule cost in mean test gain?
#
# For each seed it writes a world's records, splits them, and calibrates
# passfail and rubric5 once with --select point and once with the default
# --select lower-bound (the second run replays every answer from the cache;
# only the test judging of a different version is new), with each editor:
# the simulated editor, and sim:random-rules, a proposer that ignores the
# disagreement (its edits are noise, or advice by chance). It prints one
# row per calibration on stderr and a summary per editor, size, judge and
# rule.
#
#   scripts/selection-study.sh [SEEDS] [SIZES] [EDITORS]
#   scripts/selection-study.sh "1 2 3 4 5 6 7 8 9 10" "100 300 1200" "sim sim:random-rules"
#
# Needs go and python3; runs offline (--model sim) in a temporary folder.
set -euo pipefail
seeds=${1:-"1 2 3 4 5 6 7 8 9 10"}
sizes=${2:-"100 300 1200"}
editors=${3:-"sim sim:random-rules"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gavel" "$root/cmd/gavel"
g="$work/gavel"
rows="$work/rows.jsonl"
for n in $sizes; do
  for seed in $seeds; do
    db="$work/w$n-$seed.db"
    "$g" --db "$db" sim records --n "$n" --seed "$seed" -o "$work/r.jsonl" >/dev/null
    "$g" --db "$db" ingest "$work/r.jsonl" >/dev/null
    "$g" --db "$db" split main --allow-small >/dev/null
    for editor in $editors; do
    for judge in passfail rubric5; do
      for rule in point lower-bound; do
        "$g" --db "$db" calibrate --judge "$judge" --split main --model sim --editor-model "$editor" --select "$rule" \
          --resamples 1000 --json 2>/dev/null |
          python3 -c '
import json, sys
r = json.load(sys.stdin)
j = r["judges"][0]
sel = [v for v in r["versions"] if v["hash"] == j["selected_version"]][0]
print(json.dumps({"n": int(sys.argv[1]), "seed": int(sys.argv[2]), "judge": sys.argv[3], "rule": sys.argv[4], "editor": sys.argv[5],
  "val_records": r["val_records"], "versions": j["versions"], "selected": sel["iteration"],
  "gain": j["gain"]["scott_pi"], "ci": j["gain"]["ci"], "val_gain": sel["val_gain"]["value"]}))
' "$n" "$seed" "$judge" "$rule" "$editor" >>"$rows"
        tail -1 "$rows" >&2
      done
    done
    done
  done
done
python3 - "$rows" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| editor | records | judge | rule | worlds | val records (mean) | original kept | test gain < 0 | mean test gain | worst |")
print("|---|---|---|---|---|---|---|---|---|---|")
keys = sorted({(r["editor"], r["n"], r["judge"], r["rule"]) for r in rows}, key=lambda k: (k[0], k[1], k[2], k[3] != "point"))
for editor, n, judge, rule in keys:
    rs = [r for r in rows if (r["editor"], r["n"], r["judge"], r["rule"]) == (editor, n, judge, rule)]
    gains = [r["gain"] if r["gain"] is not None else 0.0 for r in rs]
    print(f"| {editor} | {n} | {judge} | {rule} | {len(rs)} | {statistics.mean(r['val_records'] for r in rs):.0f} "
          f"| {sum(r['selected'] == 0 for r in rs)} | {sum(g < 0 for g in gains)} "
          f"| {statistics.mean(gains):+.3f} | {min(gains):+.3f} |")
EOF
