#!/bin/bash
# python_cost: what reading Python frames costs (docs/python.md, "Cost"), two ways.
#
# 1. Per sample, in the kernel: the BPF sampler's run time per sample (kernel.bpf_stats_enabled
#    =1, restored after; bpftool's run_time_ns / run_cnt of profile_sample) on two Python
#    processes spinning under DEPTH Python frames (bench/python_work.py), sampled at 999 Hz
#    for 8 s with python = no and python = yes (each twice); runs for other processes (a
#    shared machine) are taken out as in bench/stack_copy_cost.sh. The difference is the
#    frame walk.
#    (bench/bpf_cost_lib.sh does the runs.)
# 2. The program's slowdown: python_work.py --work N (its own time, without the session's
#    start and stop) plain, under `xpusup record --no-python` and under `xpusup record`, at
#    99 Hz, REPS times each, interleaved; medians and their ratios to the plain run's; and
#    what merging the frames cost the correlator per stack in the last recorded run.
#
# Usage: bench/python_cost.sh [--build DIR] [--reps N] [--depth D] [--work N]   (as root)
set -u
BUILD=build/release
REPS=5
DEPTH=30
WORK_UNITS=50000
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--depth) DEPTH=$2; shift 2 ;;
	--work) WORK_UNITS=$2; shift 2 ;;
	*) echo "usage: python_cost.sh [--build DIR] [--reps N] [--depth D] [--work N]" >&2; exit 100 ;;
	esac
done
XPUSUP=$BUILD/cli/xpusup
PYW=$(dirname "$0")/python_work.py
PY=/usr/bin/python3
# shellcheck source=bench/bpf_cost_lib.sh
. "$(dirname "$0")/bpf_cost_lib.sh"
bpf_cost_init python_cost

echo "## per sample, in the kernel (999 Hz, 2 processes, depth $DEPTH)"
bpf_cost_run "python = no" "samples" "sleep 30" >"$TMP/run"
read -r n t _ <"$TMP/run"
tf=$((t / n))
echo "filtered runs (a sleeping target): $tf ns per run over $n runs"
echo "| mode | ns per sample | runs | samples | Python frames per sample |"
echo "|---|---:|---:|---:|---:|"
for key in "python = no" "python = yes" "python = no" "python = yes"; do
	bpf_cost_run "$key" "samples py_stacks py_frames" "$PY $PYW $DEPTH --seconds 12" \
		"$PY $PYW $DEPTH --seconds 12" >"$TMP/run"
	read -r n t s ps pf <"$TMP/run"
	[ "${s:-0}" -gt 0 ] || { echo "python_cost: no samples" >&2; exit 111; }
	echo "| $key | $(((t - (n - s) * tf) / s)) | $n | $s |" \
		"$([ "$ps" -gt 0 ] && echo "scale=1; $pf / $ps" | bc || echo -) |"
done

echo
echo "## the program's slowdown (99 Hz, python_work.py $DEPTH --work $WORK_UNITS, $REPS reps)"
for r in $(seq "$REPS"); do
	$PY "$PYW" "$DEPTH" --work "$WORK_UNITS" >>"$TMP/plain"
	"$XPUSUP" record -o "$TMP/out-n" --no-python --session "$SESSION-n" -- \
		$PY "$PYW" "$DEPTH" --work "$WORK_UNITS" 2>/dev/null >>"$TMP/nopy"
	"$XPUSUP" record -o "$TMP/out-p" --session "$SESSION-p" -- \
		$PY "$PYW" "$DEPTH" --work "$WORK_UNITS" 2>/dev/null >>"$TMP/py"
done
python3 - "$TMP/plain" "$TMP/nopy" "$TMP/py" <<'PYEOF'
import statistics, sys
rows = [("plain", sys.argv[1]), ("record --no-python", sys.argv[2]), ("record", sys.argv[3])]
med = {}
print("| run | median | ratio to plain | min-max |")
print("|---|---:|---:|---:|")
for name, path in rows:
    v = [float(x) for x in open(path).read().split()]
    med[name] = statistics.median(v)
    print("| %s | %.3f s | %.3f | %.3f-%.3f |" % (name, med[name], med[name] / med["plain"], min(v), max(v)))
print("Python frames cost: record / record --no-python = %.3f" %
      (med["record"] / med["record --no-python"]))
PYEOF
python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['python']
print('correlator, the last record run: %d stacks merged, %d ns each' % (p['merged'], p['ns_per_merge']))
" "$TMP/out-p/stats.json"
