#!/bin/bash
# The timeline sink (kind timeline) with real sessions: synthetic source -> correlator
# shards -> trace.json. The file is valid JSON after stop and keeps the format's rules and
# xpusup's invariants (tests/timeline_check.py, an independent reader); it holds exactly the
# GPU work the source made; speedscope, in headless Chromium, opens and renders it; the
# launch map is bounded and says what it could not join; a sink that cannot create its
# file shows the problem, goes on, and writes a whole file once it can; kill -9 mid-run.
# TAP on stdout.
#
# Usage: sink_timeline_test.sh XPUSUP_BINARY TESTS_SOURCE_DIR
set -u
XPUSUP=${1:?usage: sink_timeline_test.sh XPUSUP_BINARY TESTS_SOURCE_DIR}
TESTS=${2:?usage: sink_timeline_test.sh XPUSUP_BINARY TESTS_SOURCE_DIR}
. "$(dirname "$0")/session_lib.sh"
session_lib_init timelinetest t
CHECK="$TESTS/timeline_check.py"
. "$(dirname "$0")/speedscope_lib.sh"
cleanup_extra() { speedscope_stop; }

summary() { # summary CHECKER_OUTPUT_FILE KEY: a value from the checker's JSON summary
	tail -n 1 "$1" | "$PY" -c "import json, sys; print(json.load(sys.stdin).get('$2'))" 2>/dev/null
}

# The synthetic training loop: 4 processes of 2 threads; every launch joined.
synthetic() { # synthetic COUNT LAUNCHES_PER_S [EXTRA SOURCE KEYS]
	cat <<CONF
[correlator]
shards = 2
exit_grace_ms = 200
ttl_ms = 300
[source syn]
kind = synthetic
processes = 4
launches_per_s = $2
count = $1
answer_frame = no
${3:-}
CONF
}

# synthetic.c: launch u is a memset when u % 8 == 7, else a memcpy when u % 4 == 3, else a
# kernel
gpu_counts() { # gpu_counts LAUNCHES -> kernel memcpy memset
	"$PY" -c "
n = $1
print(sum(1 for u in range(n) if u % 8 != 7 and u % 4 != 3),
      sum(1 for u in range(n) if u % 8 != 7 and u % 4 == 3),
      sum(1 for u in range(n) if u % 8 == 7))"
}

# ---- paced: every rule, exact SM-active, proper nesting on CPU threads ------------------
# Paced at 2000 launches a second a thread's calls and ranges are microseconds long and
# milliseconds apart, as in a real program; flat out the source stamps them closer than
# they last, so only the paced run is held to proper nesting.
s="$PREFIX-paced"
{ printf '[sink trace]\nkind = timeline\npath = paced/trace.json\n'; synthetic 2400 2000; } >"$WORK/paced.conf"
"$XPUSUP" start "$WORK/paced.conf" --session "$s" >/dev/null 2>&1
ok $? "paced: a session with a timeline sink starts"
wait_for 60 "$s" "c('syn', 'launches') == 2400 and sum_('pending') == 0 and c('trace', 'events_in') == c('syn', 'records_out')"
ok $? "paced: the sink received every event"
[ -e "$WORK/paced/trace.json.partial" ] && [ ! -e "$WORK/paced/trace.json" ]
ok $? "paced: while running the events stream into trace.json.partial; no trace.json yet"
got=$(json "$s" "c('trace', 'flows'), c('trace', 'flows_unknown_launch'), c('trace', 'events_dropped'), c('trace', 'tables_full'), c('trace', 'bytes_written') > 0")
[ "$got" = "2400 0 0 0 True" ]
ok $? "paced: one flow per launch, none unknown, nothing dropped (flows, unknown, dropped, full, bytes: $got)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "paced"
[ -s "$WORK/paced/trace.json" ] && [ ! -e "$WORK/paced/trace.json.partial" ]
ok $? "paced: at stop trace.json is renamed into place, no partial file left"
"$PY" -c "import json, sys; json.load(open(sys.argv[1], encoding='utf-8'))" "$WORK/paced/trace.json" 2>"$WORK/json.err"
ok $? "paced: trace.json is valid JSON ($(head -c 200 "$WORK/json.err"))"
read -r k c m <<<"$(gpu_counts 2400)"
"$PY" "$CHECK" "$WORK/paced/trace.json" --nesting --sm exact --expect kernel="$k" \
	--expect memcpy="$c" --expect memset="$m" --expect flows=2400 --expect cuda_api=2400 \
	--expect cpu_samples=150 --expect stacks=$((2400 + 2400 + 150)) --expect stacks_inline=0 --frames-exact \
	>"$WORK/paced.check" 2>&1
ok $? "paced: the checker finds every rule kept and $k kernels, $c copies, $m memsets, 2400 flows, a stack in stackFrames for every launch, GPU record and sample ($(head -c 600 "$WORK/paced.check" | tr '\n' ' '))"
[ "$(summary "$WORK/paced.check" sm_windows_checked)" -gt 0 ] 2>/dev/null &&
	[ "$(summary "$WORK/paced.check" gpu_tracks)" = 8 ] &&
	[ "$(summary "$WORK/paced.check" ranges)" -gt 0 ] 2>/dev/null
ok $? "paced: 8 stream tracks (4 processes x 2 streams), ranges, and SM-active windows checked ($(tail -n 1 "$WORK/paced.check"))"

# ---- speedscope in headless Chromium (tests/speedscope_lib.sh) -------------------------
speedscope_start
rc=$?
if [ $rc = 1 ]; then
	speedscope_missing "speedscope"
else
	cp "$WORK/paced/trace.json" "$WORK/web/trace.json"
	[ $rc = 0 ]
	ok $? "speedscope: its files and trace.json are served on 127.0.0.1:$port"
	tracks=$(summary "$WORK/paced.check" tracks_with_slices)
	# trace.json: one profile per thread or stream track with slices, the first named by
	# the metadata, the sandwich view's table of frames drawn from it, a frame of it
	speedscope_renders trace.json "(1/$tracks)" "synth (pid 1000000), synth (tid 1000000)" \
		"Symbol Name" cudaLaunchKernel
	ok $? "speedscope: loads trace.json and renders its $tracks tracks ($(speedscope_said))"
	# The folded sink's output is the other format speedscope must take (golden file of
	# tests/sink_test.sh): Brendan Gregg's collapsed stacks, GPU leaves included.
	cp "$TESTS/golden/flame.folded" "$WORK/web/flame.folded"
	speedscope_renders flame.folded "Symbol Name" "[gpu] void synth_kernel_0" 0x401a20
	ok $? "speedscope: loads flame.folded and renders its stacks, GPU leaves included ($(speedscope_said))"
fi

# ---- flat out: a bounded launch map, unjoined GPU work, bound SM-active ------------------
# GPU records delivered up to 4096 launches late, a launch map of 1024: the launches of many
# are forgotten by the time they come, and say so; 5 % of launches are left out, so their
# GPU work goes out unjoined, with no flow.
s="$PREFIX-flat"
{ printf '[sink trace]\nkind = timeline\npath = flat/trace.json\nmax_launches = 1024\n'
  synthetic 60000 0 "missing_launch_pct = 5
reorder = 4096"; } >"$WORK/flat.conf"
"$XPUSUP" start "$WORK/flat.conf" --session "$s" >/dev/null 2>&1
ok $? "flat out: a session with a timeline sink starts"
wait_for 120 "$s" "c('syn', 'launches') == 60000 and sum_('pending') == 0 and c('trace', 'events_in') == c('syn', 'records_out')"
ok $? "flat out: the sink received every event"
got=$(json "$s" "c('trace', 'flows') + c('trace', 'flows_unknown_launch') + c('trace', 'flows_waiting') == sum_('matched'), c('trace', 'flows_unknown_launch') + c('trace', 'flows_waiting') > 0, c('trace', 'flows')")
flows=${got##* }
api=$(json "$s" "c('syn', 'gpu_records') - c('syn', 'gpu_missing_launch')")
[ "${got% *}" = "True True" ]
ok $? "flat out: every GPU record the correlators joined has a flow or counts as launch unknown, and some launches were forgotten ($got)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "flat out"
read -r k c m <<<"$(gpu_counts 60000)"
"$PY" "$CHECK" "$WORK/flat/trace.json" --sm bound --expect kernel="$k" --expect memcpy="$c" \
	--expect memset="$m" --expect flows="$flows" --expect cuda_api="$api" >"$WORK/flat.check" 2>&1
ok $? "flat out: valid, every rule kept, $k kernels, $c copies, $m memsets, $api calls, $flows flows ($(head -c 600 "$WORK/flat.check" | tr '\n' ' '))"

# ---- a sink that cannot create its file ------------------------------------------------
s="$PREFIX-nodir"
: >"$WORK/notadir" # a file where the trace's folder should be: it cannot be made
{ printf '[sink trace]\nkind = timeline\npath = notadir/trace.json\n'; synthetic 0 2000; } >"$WORK/nodir.conf"
"$XPUSUP" start "$WORK/nodir.conf" --session "$s" >/dev/null 2>&1
ok $? "not a folder: the session starts although the trace's folder cannot be made"
wait_for 10 "$s" "c('trace', 'write_errors') > 0 and 'Not a directory' in (a['trace']['problem'] or '') and c('trace', 'events_dropped') > 0"
ok $? "not a folder: the problem is shown in status and the events are counted as dropped ($(json "$s" "a['trace']['problem'], c('trace', 'events_dropped')"))"
rm "$WORK/notadir"
wait_for 10 "$s" "a['trace']['problem'] is None and a['trace']['state'] == 'running'"
ok $? "not a folder: once it can, the sink creates the file and the problem clears"
sleep 0.5
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
"$PY" "$CHECK" "$WORK/notadir/trace.json" --nesting >"$WORK/nodir.check" 2>&1 &&
	"$PY" -c "import json, sys; d = json.load(open(sys.argv[1]))['otherData']; sys.exit(0 if d['events_dropped'] > 0 and d['flows'] > 0 else 1)" "$WORK/notadir/trace.json"
ok $? "not a folder: at stop the file is whole, with what came after, and says what was dropped ($(head -c 300 "$WORK/nodir.check" | tr '\n' ' '))"

# ---- kill -9 mid-run -------------------------------------------------------------------
s="$PREFIX-kill"
{ printf '[sink trace]\nkind = timeline\npath = kill/trace.json\n'; synthetic 30000 10000; } >"$WORK/kill.conf"
"$XPUSUP" start "$WORK/kill.conf" --session "$s" >/dev/null 2>&1
sleep 1.2
kill -9 "$(json "$s" "a['trace']['pid']")"
wait_for 10 "$s" "a['trace']['restarts'] == 1 and a['trace']['state'] == 'running'"
ok $? "kill -9: the timeline sink killed mid-run is restarted"
wait_for 30 "$s" "c('syn', 'launches') == 30000 and $(settled trace)"
got=$(json "$s" "c('trace', 'state_lost') + c('trace', 'events_missed') > 0, c('trace', 'state_lost')")
[ "${got%% *}" = "True" ]
ok $? "kill -9: what the killed run had received is counted lost: the trace is whole only at stop ($got)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "kill -9"
"$PY" "$CHECK" "$WORK/kill/trace.json" >"$WORK/kill.check" 2>&1 && [ ! -e "$WORK/kill/trace.json.partial" ]
ok $? "kill -9: the final trace.json, of the restarted run, is whole and keeps every rule ($(head -c 300 "$WORK/kill.check" | tr '\n' ' '))"

# ---- xpusup check (docs/check.md) on every trace.json above --------------------------------
for f in paced flat notadir kill; do
	"$XPUSUP" check "$WORK/$f/trace.json" >"$WORK/$f.xcheck" 2>&1
	ok $? "xpusup check: $f/trace.json is clean ($(tail -n 3 "$WORK/$f.xcheck" | sed "s|$WORK/||" | tr '\n' ' '))"
done

echo "1..$n"
[ $failed = 0 ]
