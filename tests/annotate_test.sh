#!/bin/bash
# The annotate library and the inproc source with real sessions (docs/inproc.md):
#
#   - no session: annotated programs run, say "xpusup: annotations off" once, exit 0, and
#     the registered callbacks still see every call (shared and static library);
#   - under `xpusup record`: 4 threads of nested C scopes and 2 threads of C++ RAII scopes
#     reach the test sink properly nested per thread, with exact counts (annotate_check.py);
#   - never blocks: with the actor stopped (SIGSTOP) before the hand-off, the program gives up
#     after the 200 ms handshake timeout; stopped after it, the flood fills the ring, drops and
#     counts, and finishes at once; the drops reach the session as LOSS;
#   - `record` of an annotated program with the built-in pipeline's sources, sinks and the
#     CPU source: the ranges are slices on its threads in trace.json (which `xpusup check`
#     finds clean) and `[range] NAME` frames above the CPU samples taken inside them in
#     flame.folded; plain `xpusup record` attaches it too.
#
# Usage: annotate_test.sh XPUSUP ANN_THREADS ANN_THREADS_STATIC ANN_FLOOD ANN_CPP|none ANN_BUSY
set -u
XPUSUP=${1:?usage: annotate_test.sh XPUSUP ANN_THREADS ANN_THREADS_STATIC ANN_FLOOD ANN_CPP}
THREADS=$2
THREADS_STATIC=$3
FLOOD=$4
CPP=$5
BUSY=${6:-none}
CHECK="$(dirname "$0")/annotate_check.py"
. "$(dirname "$0")/session_lib.sh"
session_lib_init anntest a
cd "$WORK" || exit 1
ITER=1000
unset XPUSUP_SESSION_DIR

ok_or() { # STATUS TEXT: ok, and the status again for "|| show what went wrong"
	ok "$1" "$2"
	return "$1"
}

cleanup_extra() {
	[ -n "${APID:-}" ] && kill -CONT "$APID" 2>/dev/null
}

# ---- no session ----------------------------------------------------------------------------
for prog in "$THREADS" "$THREADS_STATIC"; do
	"$prog" 200 --expect-callbacks >"$WORK/off.out" 2>"$WORK/off.err"
	rc=$?
	lines=$(grep -c '^xpusup: annotations off' "$WORK/off.err")
	others=$(grep -vc '^xpusup: annotations off' "$WORK/off.err")
	[ $rc = 0 ] && [ "$lines" = 1 ] && [ "$others" = 0 ] && grep -q 'enabled=0' "$WORK/off.out"
	ok_or $? "no session: $(basename "$prog") exits 0, one disable line, callbacks see every call" || cat "$WORK/off.out" "$WORK/off.err"
done
XPUSUP_SESSION_DIR=/nonexistent/session "$FLOOD" 1000 >"$WORK/off.out" 2>"$WORK/off.err"
[ $? = 0 ] && grep -q '^xpusup: annotations off: no session at /nonexistent' "$WORK/off.err"
ok $? "no session: a session directory without a socket disables the library"

# ---- under record ----------------------------------------------------------------------------
conf() { # DUMP [EXTRA]
	printf '[source ann]\nkind = inproc\n%s\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
		"${2:-}" "$1"
}
# 4 x 1000 iterations are about 48,000 records in a few ms: a ring that holds them all, so
# nothing is dropped and the counts are exact (the default 1 MiB holds about 16,000).
conf "$WORK/threads.jsonl" "ring_kib = 8192" >"$WORK/threads.conf"
"$XPUSUP" record -c "$WORK/threads.conf" --session "$PREFIX-thr" -- \
	"$THREADS" $ITER --expect-callbacks >"$WORK/thr.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q 'enabled=1' "$WORK/thr.out" && ! grep -q 'annotations off' "$WORK/thr.out"
ok $? "record: the annotated C program attaches and exits 0"
"$PY" "$CHECK" "$WORK/threads.jsonl" threads $ITER >"$WORK/thr.check" 2>&1
ok_or $? "record: 4 threads' nested C scopes arrive nested per thread, counts exact ($(head -1 "$WORK/thr.check"))" || { cat "$WORK/thr.check" | head -20; tail -20 "$WORK/thr.out"; }

conf "$WORK/static.jsonl" >"$WORK/static.conf"
"$XPUSUP" record -c "$WORK/static.conf" --session "$PREFIX-sta" -- \
	"$THREADS_STATIC" 300 >"$WORK/sta.out" 2>&1 &&
	"$PY" "$CHECK" "$WORK/static.jsonl" threads 300 >"$WORK/sta.check" 2>&1
ok_or $? "record: the same with the static library" || { head -20 "$WORK/sta.check"; tail -20 "$WORK/sta.out"; }

if [ "$CPP" != none ]; then
	conf "$WORK/cpp.jsonl" >"$WORK/cpp.conf"
	"$XPUSUP" record -c "$WORK/cpp.conf" --session "$PREFIX-cpp" -- \
		"$CPP" 200 >"$WORK/cpp.out" 2>&1 &&
		"$PY" "$CHECK" "$WORK/cpp.jsonl" cpp 200 >"$WORK/cpp.check" 2>&1
	ok_or $? "record: C++ RAII scopes (returns, exceptions, std::thread) nest exactly" || { head -20 "$WORK/cpp.check"; tail -20 "$WORK/cpp.out"; }
else
	echo "ok $((n + 1)) # SKIP no C++ compiler"
	n=$((n + 1))
fi

# ---- never blocks ----------------------------------------------------------------------------
S="$PREFIX-stop"
conf "$WORK/stop.jsonl" "ring_kib = 16" >"$WORK/stop.conf"
"$XPUSUP" start "$WORK/stop.conf" --session "$S" >"$WORK/stop.start" 2>&1
ok $? "stopped actor: session starts"
APID=$(json "$S" "a['ann']['pid']")
export XPUSUP_SESSION_DIR="$BASE/$S"

kill -STOP "$APID"
t0=$(date +%s%N)
timeout 10 "$FLOOD" 100000 >"$WORK/flood1.out" 2>"$WORK/flood1.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 0 ] && [ $ms -lt 2000 ] && grep -q 'did not answer' "$WORK/flood1.err"
ok_or $? "stopped actor before the hand-off: gives up after the timeout, finishes in ${ms} ms" || cat "$WORK/flood1.out" "$WORK/flood1.err"
kill -CONT "$APID"
sleep 0.5 # the actor answers the abandoned hello and sees its EOF

mkfifo "$WORK/go"
timeout 20 "$FLOOD" 200000 --wait <"$WORK/go" >"$WORK/flood2.out" 2>"$WORK/flood2.err" &
fpid=$!
exec 9>"$WORK/go"
for _ in $(seq 100); do grep -q ready "$WORK/flood2.out" && break; sleep 0.05; done
grep -q 'ready enabled=1' "$WORK/flood2.out"
ok $? "stopped actor after the hand-off: the program attached"
kill -STOP "$APID"
t0=$(date +%s%N)
echo go >&9
exec 9>&-
wait $fpid
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$APID"
dropped=$(sed -n 's/.*dropped=\([0-9]*\).*/\1/p' "$WORK/flood2.out")
[ $rc = 0 ] && [ $ms -lt 3000 ] && [ "${dropped:-0}" -gt 0 ]
ok_or $? "stopped actor after the hand-off: 200000 ranges in ${ms} ms, ${dropped:-?} dropped and counted" || cat "$WORK/flood2.out" "$WORK/flood2.err"
wait_for 10 "$S" "c('ann', 'client_dropped') > 0 and c('ann', 'clients') == 0"
ok $? "stopped actor: the actor saw the client go and counted its drops"
"$XPUSUP" stop --session "$S" >/dev/null 2>&1
ok $? "stopped actor: session stops"
"$PY" - "$WORK/stop.jsonl" "$dropped" <<'PYEOF'
import json, sys
lost = sum(json.loads(l).get("value", 0) for l in open(sys.argv[1]) if '"kind":"loss"' in l)
sys.exit(0 if lost == int(sys.argv[2]) else print("LOSS records say", lost, "dropped", sys.argv[2]) or 1)
PYEOF
ok $? "stopped actor: LOSS records reach the sink and add up to the drops"
[ ! -e "$BASE/$S/inproc.sock" ]
ok $? "stopped actor: no socket left behind"
APID=
unset XPUSUP_SESSION_DIR
log_clean "$PREFIX-thr" "record"
log_clean "$S" "stopped actor"

# ---- record: ranges in trace.json and flame.folded -------------------------------------------
# ann_busy: 2 threads x 5 epochs of epoch { forward 40 ms; backward 20 ms }, spinning.
if [ "$BUSY" != none ]; then
	mkdir -p "$WORK/rec"
	cat >"$WORK/rec/pipeline.conf" <<'CONF'
[source ann]
kind = inproc

[source cpu]
kind = cpu
target = command
frequency_hz = 499

[correlator]

[sink flame]
kind = folded
path = flame.folded

[sink trace]
kind = timeline
path = trace.json

[sink stats]
kind = stats
path = stats.json
CONF
	"$XPUSUP" record -c "$WORK/rec/pipeline.conf" --session "$PREFIX-rec" -- "$BUSY" 5 \
		>"$WORK/rec.out" 2>&1
	rc=$?
	[ $rc = 0 ] && grep -q 'enabled=1 dropped=0' "$WORK/rec.out"
	ok_or $? "record -c (inproc + cpu + sinks): the annotated program attaches and exits 0" || tail -20 "$WORK/rec.out"
	"$PY" - "$WORK/rec/trace.json" >"$WORK/rec.trace" 2>&1 <<'PYEOF'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
# a push/pop pair is one X slice named after the range, on the thread that ran it
by_tid = collections.defaultdict(collections.Counter)
for e in ev:
    if e.get("cat") == "range" and e.get("ph") == "X":
        by_tid[e["tid"]][e["name"]] += 1
want = {"epoch": 5, "forward": 5, "backward": 5}
good = [t for t, c in by_tid.items() if all(c[k] == v for k, v in want.items())]
print(len(good), "threads with 5 epoch, forward, backward slices;", dict(by_tid))
sys.exit(0 if len(good) == 2 else 1)
PYEOF
	ok_or $? "record: trace.json has each thread's ranges as slices ($(head -c 120 "$WORK/rec.trace"))" || cat "$WORK/rec.trace"
	"$XPUSUP" check "$WORK/rec/trace.json" >"$WORK/rec.check" 2>&1
	ok_or $? "record: xpusup check finds trace.json clean" || head -20 "$WORK/rec.check"
	"$PY" - "$WORK/rec/flame.folded" >"$WORK/rec.flame" 2>&1 <<'PYEOF'
import sys
total = inside = fwd = 0
for line in open(sys.argv[1]):
    stack, w = line.rsplit(" ", 1)
    f, w = stack.split(";"), int(w)
    total += w
    r = [x for x in f if x.startswith("[range] ")]
    # range frames come right after the comm, outermost first: epoch, then forward/backward
    assert f[1:1 + len(r)] == r, line
    assert r in ([], ["[range] epoch"], ["[range] epoch", "[range] forward"],
                 ["[range] epoch", "[range] backward"]), line
    if r:
        inside += w
        # a CPU sample's own frames follow: the program's spin() under the scopes
        assert len(f) > 1 + len(r), line
    if r[-1:] == ["[range] forward"]:
        fwd += w
# The program spins inside its ranges nearly all of its run (about two thirds of it inside
# "forward"). The correlator places a sample by its timestamp among its thread's open and
# recently closed ranges, so a sample that arrives after the ranges around it closed still
# gets them; and a sample that arrives before the push of a range around it (the program's
# ranges come in batches, a push with the pop that follows it, 20 to 40 ms later) waits for
# its thread's range records (range_wait_ms). Only the samples before the process's first
# range record came miss. Measured: 94 to 100 % of the time under range frames, 58 to 68 %
# under forward (8 runs, release); 91 to 96 % and 58 to 64 % under ASan, also with two CPU
# hogs running (before the wait: 42 to 87 % and 16 to 48 %, which failed this check's older
# bar of 10 % under forward once in CI; before timestamp nesting: 10 to 26 %, never forward).
print(f"{inside}/{total} ns under range frames, {fwd} under forward")
sys.exit(0 if total and inside >= 0.7 * total and fwd >= 0.4 * total else 1)
PYEOF
	ok_or $? "record: flame.folded has [range] frames above the samples inside them ($(cat "$WORK/rec.flame" | tail -1))" || { cat "$WORK/rec.flame"; head -20 "$WORK/rec/flame.folded"; }
	log_clean "$PREFIX-rec" "record -c"

	# plain record: the built-in pipeline's cupti source takes annotate clients too
	"$XPUSUP" record -o "$WORK/plain" --session "$PREFIX-plain" -- "$BUSY" 2 >"$WORK/plain.out" 2>&1
	rc=$?
	[ $rc = 0 ] && grep -q 'enabled=1' "$WORK/plain.out" && grep -q '^kind = cupti' "$WORK/plain/pipeline.conf" &&
		grep -q '"name":"forward","cat":"range"' "$WORK/plain/trace.json"
	ok_or $? "plain record: the built-in pipeline attaches the annotated program, its ranges in trace.json" || tail -20 "$WORK/plain.out"
else
	for _ in 1 2 3 4 5 6; do
		echo "ok $((n + 1)) # SKIP ann_busy not built"
		n=$((n + 1))
	done
fi

echo "1..$n"
[ $failed = 0 ]
