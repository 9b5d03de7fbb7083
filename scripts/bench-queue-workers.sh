#!/bin/sh
# Times a benchmark build through the work queue with one and with two
# processes working units, each on a fresh PostgreSQL database, beside the
# same build in one process without the queue (BENCHMARKS.md).
#
#   scripts/bench-queue-workers.sh [PROBLEMS_LIMIT]
#
# Needs a PostgreSQL server on the local socket whose user may create
# databases (.ci/run sets one up) and the Go toolchain.
set -eu
limit=${1:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gavel" "$here/cmd/gavel"
host=${PGHOST:-/var/run/postgresql}
args="bench build --problems $here/examples/humaneval-x-go/humaneval_go.jsonl.gz --lang go --limit $limit --candidates 1 --seed 1 --jobs 1 --json"

fresh() {
	dropdb -h "$host" --if-exists "$1" && createdb -h "$host" "$1"
	echo "postgres:///$1?host=$host"
}
seconds() { python3 -c 'import json,sys; print(round(json.load(sys.stdin)["seconds"], 1))'; }

# One process, no queue, its own SQLite store.
t0=$(date +%s.%N)
"$work/gavel" --db "$work/one.db" $args -o "$work/one.jsonl" >/dev/null
t1=$(date +%s.%N)
echo "one process, no queue (SQLite): $(python3 -c "print(round($t1-$t0, 1))") s"

# Through the queue: the command alone works its units, one at a time.
db=$(fresh gavel_bench_q1)
"$work/gavel" --db "$db" records stats >/dev/null
t0=$(date +%s.%N)
"$work/gavel" --db "$db" $args --queue -o "$work/q1.jsonl" >/dev/null
t1=$(date +%s.%N)
echo "queue, 1 process working units: $(python3 -c "print(round($t1-$t0, 1))") s"

# Through the queue: the command and one worker, one unit at a time each.
db=$(fresh gavel_bench_q2)
"$work/gavel" --db "$db" records stats >/dev/null
"$work/gavel" --db "$db" worker --jobs 1 2>/dev/null &
worker=$!
sleep 1
t0=$(date +%s.%N)
"$work/gavel" --db "$db" $args --queue -o "$work/q2.jsonl" >/dev/null
t1=$(date +%s.%N)
kill -TERM $worker; wait $worker || true
echo "queue, 2 processes working units: $(python3 -c "print(round($t1-$t0, 1))") s"

cmp "$work/one.jsonl" "$work/q1.jsonl" && cmp "$work/one.jsonl" "$work/q2.jsonl" && echo "all three benchmarks identical"
dropdb -h "$host" gavel_bench_q1; dropdb -h "$host" gavel_bench_q2
