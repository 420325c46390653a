#!/bin/bash
# fmt_bench.sh: a capture of real batches from a synthetic session (COUNT launches flat out,
# 4 processes, 2 shards, through a publish sink to `xpusup subscribe --format raw`), then
# fmt_bench on it: CPU ns per event of decoding and of each sink format alone.
#
# Usage: [RATE=N] bench/fmt_bench.sh BUILD_DIR [COUNT] [fmt_bench options...] [KIND...]
#   (root, or XDG_RUNTIME_DIR; the capture is about 100 bytes an event, in a temp folder;
#   CAPTURE_TO=FILE keeps a copy of it there, for runs of fmt_bench of one's own, under
#   cachegrind for instance: docs/performance.md)
#   RATE=N (launches a second, default 0: flat out) paces the source. Flat out, the subscriber
#   falls behind and the capture misses events (about 40 % of 2 M launches here: the line
#   "events missed" says how many), and a capture with holes makes the formats do other work
#   than in a session (GPU work whose call never comes waits for it); 300000 lost none here.
#   The figures of docs/performance.md say which they were taken with.
set -u
BUILD=${1:?usage: fmt_bench.sh BUILD_DIR [COUNT] [fmt_bench args...]}
COUNT=${2:-200000}
shift $(($# < 2 ? $# : 2))
XPUSUP=$BUILD/cli/xpusup
WORK=$(mktemp -d /tmp/xpusup-fmtbench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
s="fmtbench$$"
printf '[correlator]\nshards = 2\n[sink pub]\nkind = publish\nlisten = ipc://%s/pub.ipc\n[source syn]\nkind = synthetic\nprocesses = 4\nlaunches_per_s = %s\ncount = %s\nanswer_frame = no\n' \
	"$WORK" "${RATE:-0}" "$COUNT" >"$WORK/c.conf"
"$XPUSUP" subscribe "ipc://$WORK/pub.ipc" --format raw -o "$WORK/capture.raw" 2>"$WORK/sub.err" &
sub=$!
"$XPUSUP" start "$WORK/c.conf" --session "$s" >/dev/null || exit 1
for _ in $(seq 1 600); do
	"$XPUSUP" status --session "$s" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
syn = [a for a in j["actors"] if a["name"] == "syn"][0]["counters"]
sent = sum(a["counters"].get("events_out", 0) for a in j["actors"] if a["role"] == "correlator")
pub = sum(a["counters"].get("events_in", 0) for a in j["actors"] if a["role"] == "sink")
sys.exit(0 if syn.get("launches", 0) == int(sys.argv[1]) and sent and pub == sent else 1)' "$COUNT" && break
	sleep 0.2
done
sleep 1
"$XPUSUP" stop --session "$s" >/dev/null
kill -INT $sub
wait $sub
cat "$WORK/sub.err" >&2
if [ -n "${CAPTURE_TO:-}" ]; then
	cp "$WORK/capture.raw" "$CAPTURE_TO" || exit 1
fi
"$BUILD/bench/fmt_bench" -d "$WORK" -c "$WORK/capture.raw" "$@"
