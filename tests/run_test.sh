#!/bin/bash
# `xpusup run`, the cupti source and the GPU environment of `record` (docs/record.md,
# docs/inproc.md), with real sessions and a stand-in for the CUPTI injection library:
#
#   - `run` without a session, without a command, into a session without an in-process
#     source: clear errors; CMD not found 127, not runnable 126, else CMD's own status;
#   - `run` into a session with a cupti source: CMD sees XPUSUP_SESSION_DIR and
#     CUDA_INJECTION64_PATH = NVTX_INJECTION64_PATH = the library xpu_cupti_lib() names; the
#     user's own CUDA_INJECTION64_PATH is kept (said once); a missing library is said once and
#     CMD still runs; an inproc source gets XPUSUP_SESSION_DIR only;
#   - cupti_standin (actors/inproc/cupti_standin.c) run with `run` gets the options of its
#     section, and its kernels and CUPTI drops reach the session: `status --json` counts the
#     drops and shows a problem line, the actor's log has the process's line, stats.json
#     counted the kernels and the LOSS; an inproc source refuses it;
#   - an annotated program run with `run` gets its ranges into the session's outputs, nested
#     and exactly counted;
#   - `record` gives CMD the same environment, only with a cupti source; the built-in pipeline
#     has one; two in-process sources are a configuration error at the second's line.
#
# Usage: run_test.sh XPUSUP CUPTI_STANDIN ANN_THREADS BUILD_ROOT
set -u
XPUSUP=${1:?usage: run_test.sh XPUSUP CUPTI_STANDIN ANN_THREADS BUILD_ROOT}
STANDIN=$2
THREADS=$3
BUILD=$4
CHECK="$(dirname "$0")/annotate_check.py"
. "$(dirname "$0")/session_lib.sh"
session_lib_init runtest r
cd "$WORK" || exit 1
unset XPUSUP_SESSION_DIR CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH XPUSUP_CUPTI_LIB

ok_or() { # STATUS TEXT: ok, and the status again for "|| show what went wrong"
	ok "$1" "$2"
	return "$1"
}

# What xpu_cupti_lib() finds for a program of the build tree: the build tree's library, when
# this build has CUPTI.
LIB="$BUILD/cupti/libxpusup_cupti.so"
[ -r "$LIB" ] || LIB=
FAKE="$WORK/libfake_cupti.so" # any readable file: the commands below never load CUDA
: >"$FAKE"
ENVSH='echo "cuda=${CUDA_INJECTION64_PATH:-} nvtx=${NVTX_INJECTION64_PATH:-} dir=${XPUSUP_SESSION_DIR:-}"'

# ---- without a session -----------------------------------------------------------------------
"$XPUSUP" run --session "$PREFIX-none" -- true >"$WORK/none.out" 2>&1
rc=$?
[ $rc = 111 ] && grep -q "^xpusup: unable to run: no session '$PREFIX-none' is running" "$WORK/none.out"
ok_or $? "no session: exit 111, says no session of that name runs" || cat "$WORK/none.out"
"$XPUSUP" run --session "$PREFIX-none" >"$WORK/nocmd.out" 2>&1
rc=$?
[ $rc = 100 ] && grep -q 'unable to run: no command given' "$WORK/nocmd.out"
ok_or $? "no command: exit 100" || cat "$WORK/nocmd.out"
"$XPUSUP" run --help >"$WORK/help.out" 2>&1 && grep -q '^usage: xpusup run \[--session NAME\] -- CMD' "$WORK/help.out" &&
	grep -q CUDA_INJECTION64_PATH "$WORK/help.out" && "$XPUSUP" help run >/dev/null 2>&1
ok $? "run --help answers (and help run)"

# ---- a session with a cupti source -----------------------------------------------------------
S="$PREFIX-gpu"
cat >"$WORK/gpu.conf" <<CONF
[source gpu]
kind = cupti
activities = kernel, memcpy
launch_stacks = no

[correlator]

[sink stats]
kind = stats
path = $WORK/gpu-stats.json
CONF
"$XPUSUP" start "$WORK/gpu.conf" --session "$S" >"$WORK/gpu.start" 2>&1
ok_or $? "cupti session starts" || cat "$WORK/gpu.start"

"$XPUSUP" run --session "$S" -- sh -c "$ENVSH" >"$WORK/env1.out" 2>"$WORK/env1.err"
rc=$?
if [ -n "$LIB" ]; then
	want="cuda=$LIB nvtx=$LIB dir=$BASE/$S"
	[ $rc = 0 ] && [ "$(cat "$WORK/env1.out")" = "$want" ] && [ ! -s "$WORK/env1.err" ]
else
	want="cuda= nvtx= dir=$BASE/$S"
	[ $rc = 0 ] && [ "$(cat "$WORK/env1.out")" = "$want" ] &&
		[ "$(grep -c 'going on without GPU activity' "$WORK/env1.err")" = 1 ]
fi
ok_or $? "run: CMD gets the session directory and the injection library ($(cat "$WORK/env1.out"))" || cat "$WORK/env1.out" "$WORK/env1.err"

XPUSUP_CUPTI_LIB="$FAKE" "$XPUSUP" run --session "$S" -- sh -c "$ENVSH" >"$WORK/env2.out" 2>"$WORK/env2.err"
[ $? = 0 ] && [ "$(cat "$WORK/env2.out")" = "cuda=$FAKE nvtx=$FAKE dir=$BASE/$S" ] && [ ! -s "$WORK/env2.err" ]
ok_or $? "run: XPUSUP_CUPTI_LIB names the library that is injected" || cat "$WORK/env2.out" "$WORK/env2.err"

CUDA_INJECTION64_PATH=/opt/other/libinject.so XPUSUP_CUPTI_LIB="$FAKE" \
	"$XPUSUP" run --session "$S" -- sh -c "$ENVSH" >"$WORK/env3.out" 2>"$WORK/env3.err"
[ $? = 0 ] && [ "$(cat "$WORK/env3.out")" = "cuda=/opt/other/libinject.so nvtx= dir=$BASE/$S" ] &&
	[ "$(wc -l <"$WORK/env3.err")" = 1 ] &&
	grep -q '^xpusup: CUDA_INJECTION64_PATH is already set to /opt/other/libinject.so: kept, so GPU activity will not be recorded by xpusup' "$WORK/env3.err"
ok_or $? "run: the user's own CUDA_INJECTION64_PATH is kept, said once" || cat "$WORK/env3.out" "$WORK/env3.err"

XPUSUP_CUPTI_LIB=/nonexistent/libxpusup_cupti.so \
	"$XPUSUP" run --session "$S" -- sh -c "$ENVSH" >"$WORK/env4.out" 2>"$WORK/env4.err"
[ $? = 0 ] && [ "$(cat "$WORK/env4.out")" = "cuda= nvtx= dir=$BASE/$S" ] && [ "$(wc -l <"$WORK/env4.err")" = 1 ] &&
	grep -q '^xpusup: going on without GPU activity: no CUPTI injection library at /nonexistent/libxpusup_cupti.so' "$WORK/env4.err"
ok_or $? "run: no library: said once, CMD still runs attached" || cat "$WORK/env4.out" "$WORK/env4.err"

"$XPUSUP" run --session "$S" -- /nonexistent/cmd >/dev/null 2>"$WORK/e127.err"
rc=$?
[ $rc = 127 ] && grep -q 'unable to run /nonexistent/cmd: No such file' "$WORK/e127.err"
ok $? "run: CMD not found exits 127 ($rc)"
: >"$WORK/notexec"
"$XPUSUP" run --session "$S" -- "$WORK/notexec" >/dev/null 2>&1
rc=$?
[ $rc = 126 ]
ok $? "run: CMD not runnable exits 126 ($rc)"
"$XPUSUP" run --session "$S" -- sh -c 'exit 3' >/dev/null 2>&1
rc=$?
[ $rc = 3 ]
ok $? "run: CMD's own exit status ($rc)"

# The stand-in: options = OPT_SET | kernel | memcpy, no launch stacks.
"$XPUSUP" run --session "$S" -- "$STANDIN" 0x80000003 10 5 >"$WORK/standin.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q 'attached options=0x80000003' "$WORK/standin.out" && grep -q 'wrote kernels=10 cupti_lost=5' "$WORK/standin.out"
ok_or $? "stand-in: attached through run, got its section's options, wrote its records" || cat "$WORK/standin.out"
wait_for 10 "$S" "c('gpu', 'cupti_dropped') == 5 and c('gpu', 'clients') == 0 and c('gpu', 'clients_total') == 1"
ok_or $? "stand-in: status --json counts CUPTI's 5 dropped records" || "$XPUSUP" status --session "$S" --json
[ "$(json "$S" "c('gpu', 'lossy_processes') == 1 and a['gpu']['problem'].startswith('records lost in 1 process (latest pid ')")" = True ]
ok_or $? "stand-in: the source's problem line says a process lost records" || json "$S" "a['gpu']"
grep -Eq '^xpusup-cupti: pid [0-9]+ \(cupti_standin\): 22 records, 0 dropped by the ring, 5 dropped by CUPTI$' "$BASE/$S.log"
ok_or $? "stand-in: its line in the actor's log (the session log)" || cat "$BASE/$S.log"
grep -q 'CUPTI activities: kernel, memcpy, launch stacks: no' "$BASE/$S.log"
ok $? "cupti source: its start line names the activities"
"$XPUSUP" stop --session "$S" >/dev/null 2>&1
ok $? "cupti session stops"
"$PY" - "$WORK/gpu-stats.json" >"$WORK/gpu-stats.check" 2>&1 <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
by = j["events"]["by_kind"]
names = [k["name"] for k in j["kernels"]["by_name"]]
print("by_kind", by, "kernels", j["kernels"]["count"], names, "cupti lost", j["losses"]["by_cause"]["cupti"])
sys.exit(0 if by.get("gpu_kernel") == 10 and by.get("cuda_api") == 10 and j["kernels"]["count"] == 10
         and names == ["standin_kernel"] and j["losses"]["by_cause"]["cupti"] == 5 else 1)
PYEOF
ok_or $? "stats.json counted the 10 kernels, 10 API calls and CUPTI's 5 drops ($(head -c 160 "$WORK/gpu-stats.check"))" || cat "$WORK/gpu-stats.check"
[ ! -e "$BASE/$S/inproc.sock" ]
ok $? "cupti session: no socket left behind"
log_clean "$S" "cupti session"

# ---- an annotated program with run -----------------------------------------------------------
S="$PREFIX-ann"
printf '[source gpu]\nkind = cupti\n[correlator]\n[sink dump]\nkind = test\ndump = %s\n' \
	"$WORK/ann.jsonl" >"$WORK/ann.conf"
"$XPUSUP" start "$WORK/ann.conf" --session "$S" >/dev/null 2>&1
ok $? "annotate: session with a cupti source starts"
"$XPUSUP" run --session "$S" -- "$THREADS" 200 >"$WORK/ann.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q 'enabled=1' "$WORK/ann.out" && ! grep -q 'annotations off' "$WORK/ann.out"
ok_or $? "annotate: the program run with run attaches to the cupti source" || cat "$WORK/ann.out"
# a cupti section without keys: every activity but memory, in-process launch stacks (0x800203bf)
"$XPUSUP" run --session "$S" -- "$STANDIN" 0x800203bf 1 0 >"$WORK/standin2.out" 2>&1
ok_or $? "annotate: beside it, a CUPTI client gets the default options" || cat "$WORK/standin2.out"
wait_for 10 "$S" "c('gpu', 'clients_total') == 2 and c('gpu', 'clients') == 0"
"$XPUSUP" stop --session "$S" >/dev/null 2>&1
"$PY" "$CHECK" "$WORK/ann.jsonl" threads 200 >"$WORK/ann.check" 2>&1
ok_or $? "annotate: its ranges reach the session's sink, nested, counts exact ($(head -1 "$WORK/ann.check"))" || head -20 "$WORK/ann.check"
grep -Eq '^xpusup-cupti: pid [0-9]+ \(ann_threads\): [0-9]+ records, 0 dropped by the ring, 0 dropped by CUPTI$' "$BASE/$S.log"
ok $? "annotate: the annotate client's line in the log"

# ---- an inproc source: annotations only ------------------------------------------------------
S="$PREFIX-inp"
printf '[source ann]\nkind = inproc\n[correlator]\n[sink dump]\nkind = test\n' >"$WORK/inp.conf"
"$XPUSUP" start "$WORK/inp.conf" --session "$S" >/dev/null 2>&1
ok $? "inproc session starts"
XPUSUP_CUPTI_LIB="$FAKE" "$XPUSUP" run --session "$S" -- sh -c "$ENVSH" >"$WORK/env5.out" 2>"$WORK/env5.err"
[ $? = 0 ] && [ "$(cat "$WORK/env5.out")" = "cuda= nvtx= dir=$BASE/$S" ] && [ ! -s "$WORK/env5.err" ]
ok_or $? "run into an inproc source: the session directory, no CUDA injection" || cat "$WORK/env5.out" "$WORK/env5.err"
"$XPUSUP" run --session "$S" -- "$STANDIN" 0 1 0 >"$WORK/refused.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q 'not attached' "$WORK/refused.out" &&
	wait_for 5 "$S" "c('ann', 'refused') == 1" &&
	grep -Eq '^xpusup-inproc: refused pid [0-9]+: a CUPTI client needs a source of kind = cupti$' "$BASE/$S.log"
ok_or $? "an inproc source refuses a CUPTI client and says why" || cat "$WORK/refused.out" "$BASE/$S.log"
[ "$(json "$S" "'cupti_dropped' in a['ann']['counters']")" = False ]
ok $? "an inproc source has no cupti_dropped counter"
"$XPUSUP" stop --session "$S" >/dev/null 2>&1

# ---- a session without an in-process source --------------------------------------------------
S="$PREFIX-syn"
printf '[source t]\nkind = test\n[sink dump]\nkind = test\n' >"$WORK/syn.conf"
"$XPUSUP" start "$WORK/syn.conf" --session "$S" >/dev/null 2>&1
"$XPUSUP" run --session "$S" -- true >"$WORK/nosrc.out" 2>&1
rc=$?
[ $rc = 100 ] && grep -q "^xpusup: unable to run: session $S has no cupti or inproc source" "$WORK/nosrc.out"
ok_or $? "run into a session without an in-process source: exit 100, says so ($rc)" || cat "$WORK/nosrc.out"
"$XPUSUP" stop --session "$S" >/dev/null 2>&1

# ---- record ----------------------------------------------------------------------------------
printf '[source gpu]\nkind = cupti\n[correlator]\n[sink dump]\nkind = test\n' >"$WORK/rec-gpu.conf"
XPUSUP_CUPTI_LIB="$FAKE" "$XPUSUP" record -c "$WORK/rec-gpu.conf" --session "$PREFIX-rg" -- \
	sh -c "$ENVSH" >"$WORK/rec1.out" 2>&1
[ $? = 0 ] && grep -q "^cuda=$FAKE nvtx=$FAKE dir=$BASE/$PREFIX-rg\$" "$WORK/rec1.out"
ok_or $? "record -c with a cupti source: CMD gets the injection library" || cat "$WORK/rec1.out"
XPUSUP_CUPTI_LIB=/nonexistent/lib.so "$XPUSUP" record -c "$WORK/rec-gpu.conf" --session "$PREFIX-rm" -- \
	sh -c "$ENVSH" >"$WORK/rec2.out" 2>&1
[ $? = 0 ] && grep -q "^cuda= nvtx= dir=$BASE/$PREFIX-rm\$" "$WORK/rec2.out" &&
	[ "$(grep -c 'going on without GPU activity: no CUPTI injection library at /nonexistent/lib.so' "$WORK/rec2.out")" = 1 ]
ok_or $? "record: no library: said once, CMD runs" || cat "$WORK/rec2.out"
CUDA_INJECTION64_PATH=/opt/other.so NVTX_INJECTION64_PATH=/opt/other.so XPUSUP_CUPTI_LIB="$FAKE" \
	"$XPUSUP" record -c "$WORK/rec-gpu.conf" --session "$PREFIX-ru" -- sh -c "$ENVSH" >"$WORK/rec3.out" 2>&1
[ $? = 0 ] && grep -q "^cuda=/opt/other.so nvtx=/opt/other.so dir=" "$WORK/rec3.out" &&
	[ "$(grep -c 'CUDA_INJECTION64_PATH is already set to /opt/other.so: kept' "$WORK/rec3.out")" = 1 ]
ok_or $? "record: the user's CUDA_INJECTION64_PATH is kept, said once" || cat "$WORK/rec3.out"
NVTX_INJECTION64_PATH=/opt/nvtx.so XPUSUP_CUPTI_LIB="$FAKE" \
	"$XPUSUP" record -c "$WORK/rec-gpu.conf" --session "$PREFIX-rn" -- sh -c "$ENVSH" >"$WORK/rec4.out" 2>&1
[ $? = 0 ] && grep -q "^cuda=$FAKE nvtx=/opt/nvtx.so dir=" "$WORK/rec4.out" &&
	[ "$(grep -c 'NVTX_INJECTION64_PATH is already set to /opt/nvtx.so: kept, so NVTX ranges' "$WORK/rec4.out")" = 1 ]
ok_or $? "record: the user's NVTX_INJECTION64_PATH is kept, said once; CUDA's is ours" || cat "$WORK/rec4.out"
XPUSUP_CUPTI_LIB="$FAKE" "$XPUSUP" record -c "$WORK/inp.conf" --session "$PREFIX-ri" -- \
	sh -c "$ENVSH" >"$WORK/rec5.out" 2>&1
[ $? = 0 ] && grep -q "^cuda= nvtx= dir=$BASE/$PREFIX-ri\$" "$WORK/rec5.out" && ! grep -q 'GPU activity' "$WORK/rec5.out"
ok_or $? "record -c without a cupti source: no injection, nothing said" || cat "$WORK/rec5.out"
XPUSUP_CUPTI_LIB="$FAKE" "$XPUSUP" record -o "$WORK/plain" --session "$PREFIX-rp" -- \
	sh -c "$ENVSH" >"$WORK/rec6.out" 2>&1
[ $? = 0 ] && grep -q "^cuda=$FAKE nvtx=$FAKE dir=$BASE/$PREFIX-rp\$" "$WORK/rec6.out" &&
	grep -A1 '^\[source gpu\]' "$WORK/plain/pipeline.conf" | grep -q '^kind = cupti$' &&
	! grep -q '^kind = inproc' "$WORK/plain/pipeline.conf"
ok_or $? "plain record: the built-in pipeline's cupti source, CMD gets the injection library" || { cat "$WORK/rec6.out"; cat "$WORK/plain/pipeline.conf"; }

# CMD runs as it would without us: SIGPIPE not ignored (record ignores it for itself, and an
# ignored signal stays so across exec)
"$XPUSUP" record -c "$WORK/inp.conf" --session "$PREFIX-rs" -- sh -c 'grep SigIgn /proc/self/status' >"$WORK/rec7.out" 2>&1
ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "$WORK/rec7.out")
[ -n "$ign" ] && [ $((0x$ign & 0x1000)) = 0 ]
ok_or $? "record: CMD gets SIGPIPE's default action (SigIgn $ign)" || cat "$WORK/rec7.out"
"$XPUSUP" record -c "$WORK/inp.conf" --session "$PREFIX-rd" -- /tmp >"$WORK/rec8.out" 2>&1
rc=$?
[ $rc = 127 ] && grep -q "not executable" "$WORK/rec8.out" && ! grep -q "starting session" "$WORK/rec8.out"
ok_or $? "record: a folder as CMD is refused before any session (exit $rc)" || cat "$WORK/rec8.out"
# outputs of an earlier run under the same names are not shown as this one's: a short run
# leaves trace.json, a longer one windows and their index beside it
mkdir -p "$WORK/again"
printf '[correlator]\nshards = 1\n[source syn]\nkind = synthetic\nprocesses = 1\nlaunches_per_s = 2000\ncount = 0\n[sink t]\nkind = timeline\npath = %s/again/trace.json\nwindow_s = 1\n' "$WORK" >"$WORK/again.conf"
"$XPUSUP" record -c "$WORK/again.conf" --session "$PREFIX-ra" -- true >"$WORK/rec9.out" 2>&1
sleep 1.2
"$XPUSUP" record -c "$WORK/again.conf" --session "$PREFIX-rb" -- sleep 3 >"$WORK/rec10.out" 2>&1
grep -q "timeline   $WORK/again/trace.json (" "$WORK/rec9.out" &&
	grep -q "timeline   $WORK/again/trace.index.json ([2-9] windows of up to 1 s" "$WORK/rec10.out" &&
	! grep -q "again/trace.json (" "$WORK/rec10.out"
ok_or $? "record: the windows of this run are shown, not the trace.json of the run before" || cat "$WORK/rec9.out" "$WORK/rec10.out"
sleep 1.2
"$XPUSUP" record -c "$WORK/again.conf" --session "$PREFIX-rc" -- sleep 3 >"$WORK/rec11.out" 2>&1
grep -Eq "timeline   $WORK/again/trace.index.json \(([2-9]) windows of up to 1 s, each a trace of its own; ([4-9]|1[0-9]) listed with an earlier run's" "$WORK/rec11.out"
ok_or $? "record: a run after a windowed one counts its own windows and says the index lists the earlier ones too" || cat "$WORK/rec11.out"

# ---- one in-process source per pipeline ------------------------------------------------------
printf '[correlator]\n[source ann]\nkind = inproc\n\n[source gpu]\nkind = cupti\n' >"$WORK/two.conf"
"$XPUSUP" start --check "$WORK/two.conf" >"$WORK/two.out" 2>&1
rc=$?
[ $rc = 100 ] && grep -q "^$WORK/two.conf:5: only one in-process source per pipeline: \[source gpu\]" "$WORK/two.out"
ok_or $? "two in-process sources: exit 100 at the second's line" || cat "$WORK/two.out"

echo "1..$n"
[ $failed = 0 ]
