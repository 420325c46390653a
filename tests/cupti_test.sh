#!/bin/bash
# The CUPTI injection library without a GPU (root; CI runs it): docs/cupti.md.
#
#   - libxpusup_cupti.so exports exactly InitializeInjection, InitializeInjectionNvtx2 and
#     xpusup_launch_marker; it loads with dlopen;
#   - InitializeInjection returns 1 and says once why GPU activity is off: no session, a stale
#     session directory, a live session on a machine without a GPU (CUPTI refuses);
#   - the stand-in (cupti/gpu_standin.c), a real process speaking the library's hand-off with
#     the library's conversion code, launching through a vendor library's callback as CUDA
#     does, under `xpusup record`: kernels, copies, NVTX ranges and CUPTI's LOSS reach the
#     outputs, kernels sit under the host functions that launched them (joined by
#     correlation id), and graph kernels and memsets under the function that created their
#     node. Twice:
#       launch_stacks = inproc (the default): cupti_gpu_standin_nofp, no frame pointers
#         anywhere and a vendor library that keeps data in rbp, captures in process with
#         cupti/launch_stack.c: every matmul kernel under main, train_step, launch_matmul
#         and vendor_launch, named, in that order; a frame-pointer walk from the same
#         callback is lost; the capture counts;
#       launch_stacks = marker: cupti_gpu_standin, frame pointers everywhere, calls the
#         marker in the library's file and the cpu source's uprobe captures the stacks.
#   - a Python program launching in process (tests/python/launch_inproc.py through ctypes,
#     liblaunch_inproc.so beside LIB): every LAUNCH reads fake_launch <- launch_kernels <-
#     train_step <- main <- <module>, the Python frames named with their lines.
#
# Usage: cupti_test.sh XPUSUP LIB LOAD_TEST STANDIN NVTX_SMOKE STANDIN_NOFP
set -u
XPUSUP=${1:?usage: cupti_test.sh XPUSUP LIB LOAD_TEST STANDIN NVTX_SMOKE STANDIN_NOFP}
LIB=${2:?}
LOAD_TEST=${3:?}
STANDIN=${4:?}
NVTX_SMOKE=${5:?}
STANDIN_NOFP=${6:?}
. "$(dirname "$0")/session_lib.sh"
session_lib_init cuptitest u
cd "$WORK" || exit 1

# ---- exports ---------------------------------------------------------------------------------
nm -D --defined-only "$LIB" | awk '$2 ~ /^[TtWiDdBb]$/ {print $3}' | sed 's/@.*//' | sort >exports.txt
printf 'InitializeInjection\nInitializeInjectionNvtx2\nxpusup_launch_marker\n' >want.txt
cmp -s exports.txt want.txt
ok $? "exports exactly InitializeInjection, InitializeInjectionNvtx2, xpusup_launch_marker ($(tr '\n' ' ' <exports.txt))"

# ---- no session, stale session -----------------------------------------------------------------
env -u XPUSUP_SESSION_DIR "$LOAD_TEST" "$LIB" >none.out 2>none.err
rc=$?
[ $rc = 0 ] && grep -qx loaded none.out &&
	[ "$(grep -c 'GPU activity off: no session (XPUSUP_SESSION_DIR is not set)' none.err)" = 1 ]
ok $? "no session: loads, InitializeInjection returns 1 three times, one line says why (rc $rc: $(head -c 200 none.err))"
XPUSUP_SESSION_DIR=$WORK/gone "$LOAD_TEST" "$LIB" >stale.out 2>stale.err
rc=$?
[ $rc = 0 ] && [ "$(grep -c "GPU activity off: no session at $WORK/gone/inproc.sock" stale.err)" = 1 ]
ok $? "stale session: the program goes on, one line says why (rc $rc: $(head -c 200 stale.err))"

# ---- NVTX through the library ----------------------------------------------------------------
NVTX_INJECTION64_PATH=$LIB LD_DEBUG=libs "$NVTX_SMOKE" >nvtx.out 2>nvtx.err
rc=$?
[ $rc = 0 ] && grep -qx 'nvtx ok' nvtx.out && grep -q "calling init: $LIB" nvtx.err
ok $? "NVTX_INJECTION64_PATH: NVTX loads the library, hands over to CUPTI, the program's NVTX calls go on (rc $rc)"

# ---- a live session, no GPU --------------------------------------------------------------------
cat >live.conf <<CONF
[source gpu]
kind = cupti

[correlator]

[sink stats]
kind = stats
path = $WORK/live-stats.json
CONF
"$XPUSUP" start live.conf --session "$PREFIX-live" >live.start 2>&1
ok $? "live: session with a cupti source starts"
SDIR=$BASE/$PREFIX-live
XPUSUP_SESSION_DIR=$SDIR timeout 30 "$LOAD_TEST" "$LIB" >live.out 2>live.err
rc=$?
# The hello is accepted; CUPTI then refuses (no driver): one line, the program goes on, and
# the library lets go of its ring (the actor sees the client leave).
[ $rc = 0 ] && grep -qx loaded live.out && [ "$(grep -c 'GPU activity off: ' live.err)" = 1 ] &&
	! grep -q 'no session\|the session refused' live.err
ok $? "live session without a GPU: CUPTI's refusal said once, the program goes on (rc $rc: $(head -c 300 live.err))"
wait_for 10 "$PREFIX-live" "c('gpu','clients_total') >= 1 and c('gpu','clients') == 0"
ok $? "live: the actor saw the client come and go ($(json "$PREFIX-live" "(c('gpu','clients_total'), c('gpu','clients'))"))"
# The library's counters reach xpusup status (lib_*): the stand-in sends its in-process
# captures' totals as inject.c does, just before it exits.
XPUSUP_SESSION_DIR=$SDIR timeout 30 "$STANDIN_NOFP" "$LIB" >live-standin.out 2>&1
rc=$?
stacks=$(sed -n 's/^stats sent: \([0-9]*\) stacks.*(ok)$/\1/p' live-standin.out)
[ $rc = 0 ] && [ "${stacks:-0}" -ge 55 ]
ok $? "live: the stand-in captured its launches' stacks and sent its counters (rc $rc: $(grep '^stats sent' live-standin.out))"
wait_for 10 "$PREFIX-live" "c('gpu','lib_stacks') == ${stacks:-0} and c('gpu','lib_stacks_failed') == 0 and c('gpu','bad_messages') == 0 and c('gpu','clients') == 0"
ok $? "live: xpusup status shows the library's counters (lib_stacks $(json "$PREFIX-live" "c('gpu','lib_stacks')") of ${stacks:-?}, bad_messages $(json "$PREFIX-live" "c('gpu','bad_messages')"))"
# A client that sends junk, a total that goes down, an unknown type: counted, not taken.
"$PY" - "$SDIR/inproc.sock" >badclient.out 2>&1 <<'PYEOF'
import os, socket, struct, sys
MAGIC = 0x3143525050555058
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(struct.pack("<QIIII16s", MAGIC, 1, os.getpid(), 2, 0, b"badclient"))
msg, anc, _, _ = s.recvmsg(32, socket.CMSG_SPACE(4))
status = struct.unpack("<QII", msg[:16])[2]
for level, kind, data in anc:
    os.close(struct.unpack("i", data[:4])[0])
def stats(values, type_=1):
    return struct.pack("<QII12Q", MAGIC, 1, type_, *(values + [0] * (12 - len(values))))
s.send(b"junk")
s.send(stats([5]))      # taken: lib_buffers_asked 5
s.send(stats([4]))      # went down: bad
s.send(stats([9], 7))   # unknown type: bad
s.close()
print("hello status", status)
sys.exit(0 if status == 0 else 1)
PYEOF
ok $? "live: a client of bad messages is attached ($(cat badclient.out))"
wait_for 10 "$PREFIX-live" "c('gpu','bad_messages') == 3 and c('gpu','lib_buffers_asked') == 5 and c('gpu','clients') == 0"
ok $? "live: its junk, a total that went down and an unknown type are counted and not taken (bad_messages, lib_buffers_asked: $(json "$PREFIX-live" "(c('gpu','bad_messages'), c('gpu','lib_buffers_asked'))"))"
"$XPUSUP" stop --session "$PREFIX-live" >/dev/null 2>&1

# ---- the stand-in under record ---------------------------------------------------------------
# check_outputs DIR MODE: what both runs must show; MODE inproc adds the in-process checks.
check_outputs() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
d, mode = sys.argv[1], sys.argv[2]
trace = json.load(open(d + "/trace.json"))
ev = trace["traceEvents"] if isinstance(trace, dict) else trace
def named(sub):
    return [e for e in ev if sub in str(e.get("name", "")) and e.get("ph") == "X"]
problems = []
mm, gs = named("matmul"), named("graph_step")
if len(mm) != 40: problems.append("matmul kernels in trace.json: %d, want 40" % len(mm))
if len(gs) != 5: problems.append("graph_step kernels in trace.json: %d, want 5" % len(gs))
copies = [e for e in ev if e.get("ph") == "X" and "HtoD" in str(e.get("name", ""))]
if len(copies) != 8: problems.append("HtoD copies: %d, want 8" % len(copies))
nvtx = [e for e in ev if "train_step" in str(e.get("name", ""))]
if not nvtx: problems.append("no train_step NVTX range in trace.json")
folded = {}
for line in open(d + "/flame.folded"):
    stack, w = line.rstrip("\n").rsplit(" ", 1)
    folded[stack] = folded.get(stack, 0) + int(w)
def weight(pred):
    return sum(w for s, w in folded.items() if pred(s.split(";")))
def kernel(f, name):
    return f[-1].startswith("[gpu]") and name in f[-1]
def in_order(f, names):
    """names appear in f, each after the one before (outermost first), as whole frames"""
    at = 0
    for n in names:
        try:
            at = f.index(n, at) + 1
        except ValueError:
            return False
    return True
mm_all = weight(lambda f: kernel(f, "matmul"))
mm_launch = weight(lambda f: kernel(f, "matmul") and "launch_matmul" in f)
mm_nvtx = weight(lambda f: kernel(f, "matmul") and "[nvtx] train_step" in f)
gs_all = weight(lambda f: kernel(f, "graph_step"))
gs_node = weight(lambda f: kernel(f, "graph_step") and "build_graph" in f)
ms_all = weight(lambda f: f[-1] == "[gpu] memset")
ms_node = weight(lambda f: f[-1] == "[gpu] memset" and "zero_grads" in f and "launch_graph" not in f)
cp_all = weight(lambda f: f[-1].startswith("[gpu] memcpy"))
cp_launch = weight(lambda f: f[-1].startswith("[gpu] memcpy") and "copy_inputs" in f)
print("matmul gpu ns %d, under launch_matmul %d, under [nvtx] train_step %d; graph_step %d, under build_graph %d"
      % (mm_all, mm_launch, mm_nvtx, gs_all, gs_node))
if not mm_all or mm_launch < 0.9 * mm_all: problems.append("matmul kernels not under launch_matmul")
if not mm_nvtx: problems.append("matmul kernels not under [nvtx] train_step")
if not gs_all or gs_node < 0.9 * gs_all: problems.append("graph kernels not under build_graph")
# a graph's memset node: the stack that built the node, not the graph launch's
graph_ms = [e for e in ev if e.get("ph") == "X" and e.get("name") == "memset"]
if len(graph_ms) != 5 or any(e.get("args", {}).get("graph_node") != 78 for e in graph_ms):
    problems.append("graph memsets in trace.json: %d, want 5 with graph_node 78 (%s)"
                    % (len(graph_ms), [e.get("args", {}).get("graph_node") for e in graph_ms][:5]))
print("graph memset gpu ns %d, under zero_grads %d" % (ms_all, ms_node))
if not ms_all or ms_node < 0.9 * ms_all: problems.append("graph memsets not under zero_grads")
print("memcpy gpu ns %d, under copy_inputs %d" % (cp_all, cp_launch))
if not cp_all or cp_launch < 0.9 * cp_all: problems.append("copies not under copy_inputs")
if mode == "inproc":
    # Every one, not 90 %: the walk is deterministic. Named frames, in call order, with the
    # vendor library between the application and the callback; no hex frame among them.
    chain = ["main", "train_step", "launch_matmul", "vendor_launch"]
    mm_chain = weight(lambda f: kernel(f, "matmul") and in_order(f, chain))
    gs_chain = weight(lambda f: kernel(f, "graph_step") and in_order(f, ["main", "build_graph", "vendor_launch"]))
    cp_chain = weight(lambda f: f[-1].startswith("[gpu] memcpy") and in_order(f, ["main", "copy_inputs", "vendor_launch"]))
    if not cp_all or cp_chain != cp_all: problems.append("not every copy under main;copy_inputs;vendor_launch")
    ms_chain = weight(lambda f: f[-1] == "[gpu] memset" and in_order(f, ["main", "zero_grads", "vendor_launch"]))
    if not ms_all or ms_chain != ms_all: problems.append("not every graph memset under main;zero_grads;vendor_launch")
    # The launch stacks of the matmul kernels, not CPU samples that pass through
    # launch_matmul: a sample may stop in a frame no record names (the vDSO of a process
    # gone before its maps were read), and that says nothing of the launch stacks.
    hex_stacks = [s for s in folded if kernel(s.split(";"), "matmul") and
                  any(x.startswith("0x") or x == "[unknown]" for x in s.split(";")[:-1])]
    hex_frames = sorted({x for s in hex_stacks for x in s.split(";")
                         if x.startswith("0x") or x == "[unknown]"})
    print("inproc: matmul under main;train_step;launch_matmul;vendor_launch %d of %d, graph_step under main;build_graph;vendor_launch %d of %d, hex frames %s"
          % (mm_chain, mm_all, gs_chain, gs_all, hex_frames[:3]))
    for s in hex_stacks[:3]:
        print("stack with an unnamed frame: " + s)
    if not mm_all or mm_chain != mm_all: problems.append("not every matmul kernel under " + ";".join(chain))
    if not gs_all or gs_chain != gs_all: problems.append("not every graph kernel under main;build_graph;vendor_launch")
    if hex_frames: problems.append("unnamed frames in matmul stacks: %s" % hex_frames[:3])
json.load(open(d + "/stats.json"))
print("\n".join(problems))
sys.exit(1 if problems else 0)
PYEOF
}

# launch_stacks = inproc, the default: the built-in pipeline.
XPUSUP_CUPTI_LIB=$LIB "$XPUSUP" record -o "$WORK/rec" --session "$PREFIX-rec" -- \
	"$STANDIN_NOFP" "$LIB" >rec.out 2>&1
rc=$?
ok $rc "inproc: record succeeds (rc $rc: $(tail -c 400 rec.out))"
# every activity but memory (0x40: off by default, docs/cupti.md)
grep -q '^options 0x800203bf$' rec.out
ok $? "inproc: the default options ask for in-process launch stacks and every activity but memory (0x800203bf: $(grep '^options' rec.out))"
# 40 matmuls, 5 graph launches, 2 graph nodes, 8 copies: 55 records, none failed or cut short.
grep -Eq '^launch stacks: 55 captured, 0 truncated, 0 failed, [0-9]+ frames, 0 not put$' rec.out
ok $? "inproc: 55 launch stacks captured, to the outermost frame ($(grep '^launch stacks' rec.out))"
# The stand-in has no frame pointers and its vendor library keeps data in rbp: a
# frame-pointer walk from the callback must be lost, or this test proves nothing.
line=$(grep '^from the callback:' rec.out)
fp=$(echo "$line" | sed -n 's/.*frame pointers \([0-9]*\) frames.*/\1/p')
cfi=$(echo "$line" | sed -n 's/.*CFI \([0-9]*\) frames (outermost).*/\1/p')
[ -n "$fp" ] && [ -n "$cfi" ] && [ "$fp" -lt 4 ] && [ "$cfi" -ge 6 ]
ok $? "inproc: from the callback a frame-pointer walk is lost, the CFI walk is not ($line)"
check_outputs "$WORK/rec" inproc >rec.check 2>&1
rc=$?
ok $rc "inproc: kernels, copies, NVTX in trace.json; every matmul kernel under main, train_step, launch_matmul, vendor_launch ($(tr '\n' ' ' <rec.check | head -c 700))"
[ $rc = 0 ] || sed "s/^/# /" rec.check
"$XPUSUP" check "$WORK/rec/trace.json" >check.out 2>&1
ok $? "inproc: xpusup check trace.json is clean ($(tail -c 300 check.out))"

# A process gone before the correlator reads its maps: the correlator is stopped (SIGSTOP,
# the watchdog told to wait) from before the stand-in starts until after it has exited, so
# /proc/PID/maps is never there to read. The MODULE records the library sends before its
# first LAUNCH name the frames all the same.
mkdir -p "$WORK/short"
sed -e "s#^path = #path = $WORK/short/#" "$WORK/rec/pipeline.conf" >"$WORK/short/pipeline.conf"
printf '\n[supervisor]\nwatchdog_ms = 120000\n' >>"$WORK/short/pipeline.conf"
SHORT_DIR=$BASE/$PREFIX-sh
XPUSUP_CUPTI_LIB=$LIB "$XPUSUP" record -c "$WORK/short/pipeline.conf" --session "$PREFIX-sh" -- \
	sh -c 'pkill -STOP -f "xpusup-correlator --session $1 " || exit 90
		"$2" "$3"; rc=$?
		pkill -CONT -f "xpusup-correlator --session $1 "; exit $rc' \
	sh "$SHORT_DIR" "$STANDIN_NOFP" "$LIB" >short.out 2>&1
rc=$?
ok $rc "short-lived: record succeeds with the correlator stopped while the program lives (rc $rc: $(tail -c 300 short.out))"
check_outputs "$WORK/short" inproc >short.check 2>&1
rc=$?
ok $rc "short-lived: every matmul kernel under main, train_step, launch_matmul, vendor_launch, named from the process's MODULE records ($(tr '\n' ' ' <short.check | head -c 600))"
[ $rc = 0 ] || sed "s/^/# /" short.check
"$PY" - "$WORK/short/stats.json" >short.unwind 2>&1 <<'PYEOF'
import json, sys
u = json.load(open(sys.argv[1])).get("unwind", {})
print("modules %s, module_frames %s" % (u.get("modules"), u.get("module_frames")))
sys.exit(0 if u.get("modules", 0) > 0 and u.get("module_frames", 0) > 0 else 1)
PYEOF
ok $? "short-lived: stats.json counts the mappings taken and the frames found through them ($(cat short.unwind))"

# launch_stacks = marker: the same pipeline with the cupti source told so; the uprobe walks
# the frame-pointer build. api_queries = yes rides along: its bit must reach the library.
# The correlator holds a kernel for its LAUNCH the cpu source's drain_ms + 100 ms; a LAUNCH
# waits in the BPF ring up to drain_ms. drain_ms = 400 leaves a loaded CI machine (ASan, tests
# in parallel) 300 ms of slack on average, not 75: one run there lost 5 of 40 stacks.
mkdir -p "$WORK/marker"
sed -e 's/^kind = cupti.*$/&\nlaunch_stacks = marker\napi_queries = yes/' \
	-e 's/^kind = cpu$/&\ndrain_ms = 400/' "$WORK/rec/pipeline.conf" >"$WORK/marker/pipeline.conf"
grep -q '^launch_stacks = marker' "$WORK/marker/pipeline.conf" &&
	grep -q '^drain_ms = 400' "$WORK/marker/pipeline.conf"
ok $? "marker: pipeline.conf with launch_stacks = marker, api_queries = yes, drain_ms = 400"
XPUSUP_CUPTI_LIB=$LIB "$XPUSUP" record -c "$WORK/marker/pipeline.conf" --session "$PREFIX-mk" -- \
	"$STANDIN" "$LIB" >marker.out 2>&1
rc=$?
ok $rc "marker: record succeeds (rc $rc: $(tail -c 400 marker.out))"
grep -q '^options 0x800503bf$' marker.out && ! grep -q '^launch stacks' marker.out
ok $? "marker: the options ask for the marker and the API queries, nothing is captured in process ($(grep '^options' marker.out))"
check_outputs "$WORK/marker" marker >marker.check 2>&1
ok $? "marker: kernels under their launcher (the uprobe's stacks), graph kernels under the node's creator ($(tr '\n' ' ' <marker.check | head -c 600))"

# A wait for the marker's stack (drain_ms 400 + launch_slack_ms 100) past ttl_ms is cut at the
# TTL by the join; the correlator says so at start, once, rather than in silence.
sed -e 's/^\[correlator\]$/&\nttl_ms = 300/' "$WORK/marker/pipeline.conf" >"$WORK/marker/ttl.conf"
grep -q '^ttl_ms = 300' "$WORK/marker/ttl.conf" &&
	"$XPUSUP" start "$WORK/marker/ttl.conf" --session "$PREFIX-ttl" >ttl.start 2>&1
rc=$?
ttl_text='launch-stack wait (drain_ms + launch_slack_ms = 500 ms) cut to ttl_ms (300 ms)'
"$XPUSUP" status --session "$PREFIX-ttl" >ttl.status 2>&1
"$XPUSUP" stop --session "$PREFIX-ttl" >/dev/null 2>&1
lines=$(grep -cF "$ttl_text" "$BASE/$PREFIX-ttl.log")
[ $rc = 0 ] && [ "$lines" = 1 ] && grep -qF "$ttl_text" ttl.status
ok $? "marker: a launch-stack wait past ttl_ms is said once in the log and in status (rc $rc, $lines lines: $(grep -m1 'cut to ttl_ms' "$BASE/$PREFIX-ttl.log"))"

# ---- Python callers, in process ----------------------------------------------------------------
# The library's capture with the Python frames it reads itself (python/self.c), through the
# hand-off and the correlator's merge, under record: /usr/bin/python3 calls
# liblaunch_inproc.so (built beside LIB from tests/python/launch_inproc.c) with ctypes.
INPROC_LIB=$(dirname "$LIB")/liblaunch_inproc.so
PYSCRIPT=$(cd "$(dirname "$0")" && pwd)/python/launch_inproc.py
printf '[source gpu]\nkind = cupti\n\n[correlator]\nttl_ms = 500\nexit_grace_ms = 100\n\n[sink dump]\nkind = test\ndump = %s\n' \
	"$WORK/pylaunch.jsonl" >pylaunch.conf
# A sanitizer build's library wants its runtimes loaded first, and Python is not sanitized:
# they are preloaded (ASan first), and the interpreter's own leaks at exit are not ours.
PRELOAD=$(ldd "$INPROC_LIB" | awk '$1 ~ /^lib(asan|ubsan)\.so/ {print $3}' | sort | tr '\n' ' ')
PYENV=()
[ -n "$PRELOAD" ] && PYENV=(LD_PRELOAD="$PRELOAD" ASAN_OPTIONS=abort_on_error=1:detect_leaks=0)
XPUSUP_CUPTI_LIB=$LIB "$XPUSUP" record -c pylaunch.conf --session "$PREFIX-py" -- \
	env "${PYENV[@]}" /usr/bin/python3 "$PYSCRIPT" "$INPROC_LIB" --session >pylaunch.out 2>&1
rc=$?
[ $rc = 0 ] && grep -q '^options 0x20' pylaunch.out && grep -qx 'not put 0' pylaunch.out &&
	! grep -q 'no Python launch stacks' pylaunch.out
ok $? "python: record of a Python program launching in process succeeds, 40 LAUNCH records put (rc $rc: $(tail -c 300 pylaunch.out))"
"$PY" - "$WORK/pylaunch.jsonl" "$PYSCRIPT" >pylaunch.check 2>&1 <<'PYEOF'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
launches = [e for e in evs if e["kind"] == "launch"]
src = open(sys.argv[2]).read().splitlines()
line = 1 + next(i for i, l in enumerate(src) if "lib.fake_launch(first, 4)" in l)
want = ["fake_launch", "launch_kernels", "train_step", "main", "<module>"]
bad = []
for e in launches:
    frames = [f or "" for f in (e.get("frames") or [])]
    names = [f.split(" (")[0] for f in frames]
    got = [x for x in names if x in want]
    lk = [f for f in frames if f.startswith("launch_kernels (")]
    if got[:5] != want or lk != ["launch_kernels (%s:%d)" % (sys.argv[2], line)]:
        bad.append((e.get("corr"), frames[:8]))
corrs = sorted(e.get("corr") for e in launches)
print("launches", len(launches), "bad", len(bad), bad[:2])
sys.exit(0 if corrs == list(range(1000, 1040)) and not bad else 1)
PYEOF
ok $? "python: every LAUNCH reads fake_launch <- launch_kernels (its line) <- train_step <- main <- <module> ($(head -c 600 pylaunch.check))"

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
