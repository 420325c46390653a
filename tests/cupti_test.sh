#!/bin/bash
# The CUPTI injection library without a GPU (root; CI runs it): docs/cupti.md.
#
#   - libxpusup_cupti.so exports exactly InitializeInjection, InitializeInjectionNvtx2 and
#     xpusup_launch_marker; it loads with dlopen;
#   - InitializeInjection returns 1 and says once why GPU activity is off: no session, a stale
#     session directory, a live session on a machine without a GPU (CUPTI refuses);
#   - cupti_gpu_standin, a real process speaking the library's hand-off with the library's
#     conversion code and calling the marker in the library's file, under `xpusup record`:
#     kernels, copies, NVTX ranges and CUPTI's LOSS reach the outputs, kernels sit under the
#     host functions that launched them (the uprobe's stacks, joined by correlation id), and
#     graph kernels under the function that created their node.
#
# Usage: cupti_test.sh XPUSUP LIB LOAD_TEST STANDIN NVTX_SMOKE
set -u
XPUSUP=${1:?usage: cupti_test.sh XPUSUP LIB LOAD_TEST STANDIN NVTX_SMOKE}
LIB=${2:?}
LOAD_TEST=${3:?}
STANDIN=${4:?}
NVTX_SMOKE=${5:?}
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
"$XPUSUP" stop --session "$PREFIX-live" >/dev/null 2>&1

# ---- the stand-in under record -----------------------------------------------------------------
XPUSUP_CUPTI_LIB=$LIB "$XPUSUP" record -o "$WORK/rec" --session "$PREFIX-rec" -- \
	"$STANDIN" "$LIB" >rec.out 2>&1
rc=$?
ok $rc "stand-in: record succeeds (rc $rc: $(tail -c 400 rec.out))"
"$PY" - "$WORK/rec" >rec.check 2>&1 <<'PYEOF'
import json, sys
d = sys.argv[1]
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
mm_all = weight(lambda f: f[-1].startswith("[gpu]") and "matmul" in f[-1])
mm_launch = weight(lambda f: f[-1].startswith("[gpu]") and "matmul" in f[-1] and "launch_matmul" in f)
mm_nvtx = weight(lambda f: f[-1].startswith("[gpu]") and "matmul" in f[-1] and "[nvtx] train_step" in f)
gs_all = weight(lambda f: f[-1].startswith("[gpu]") and "graph_step" in f[-1])
gs_node = weight(lambda f: f[-1].startswith("[gpu]") and "graph_step" in f[-1] and "build_graph" in f)
print("matmul gpu ns %d, under launch_matmul %d, under [nvtx] train_step %d; graph_step %d, under build_graph %d"
      % (mm_all, mm_launch, mm_nvtx, gs_all, gs_node))
if not mm_all or mm_launch < 0.9 * mm_all: problems.append("matmul kernels not under launch_matmul")
if not mm_nvtx: problems.append("matmul kernels not under [nvtx] train_step")
if not gs_all or gs_node < 0.9 * gs_all: problems.append("graph kernels not under build_graph")
stats = json.load(open(d + "/stats.json"))
print("\n".join(problems))
sys.exit(1 if problems else 0)
PYEOF
ok $? "stand-in: kernels, copies, NVTX in trace.json; kernels under their launcher, graph kernels under the node's creator ($(tr '\n' ' ' <rec.check | head -c 600))"
"$XPUSUP" check "$WORK/rec/trace.json" >check.out 2>&1
ok $? "stand-in: xpusup check trace.json is clean ($(tail -c 300 check.out))"

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
