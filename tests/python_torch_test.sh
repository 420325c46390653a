#!/bin/bash
# Python frames over PyTorch (Debian's python3-torch, CPU; root; CI runs it): a training loop
# in three named phases (python/torch_phases.py) under `xpusup record`:
#
#   - most of train_step's sampled time is under forward_phase, backward_phase and
#     optimizer_phase, with libtorch's native frames (at::, torch::, c10::) below them;
#   - the phases' shares against torch.profiler's of the same loop (each phase a
#     record_function range): within 10 points each. A fair comparison: one intra-op thread,
#     so both measure the CPU time of each phase on the main thread, and one run, recorded
#     by xpusup while torch.profiler measures it. Two runs, one for each, differed by up to 8
#     points between themselves on this 2-core VM (a phase's speed varies from run to run),
#     more than the sampling error of either.
#
# Exit 77 when PyTorch cannot be imported (scripts/install-deps installs python3-torch).
#
# Usage: python_torch_test.sh XPUSUP TESTDIR
set -u
XPUSUP=${1:?usage: python_torch_test.sh XPUSUP TESTDIR}
TESTDIR=${2:?}
. "$(dirname "$0")/session_lib.sh"
session_lib_init pytorch t
if ! "$PY" -c "import torch" 2>/dev/null; then
	echo "1..0 # SKIP PyTorch cannot be imported by $PY (scripts/install-deps installs python3-torch)"
	exit 77
fi
cd "$WORK" || exit 1
"$XPUSUP" record -o "$WORK/rec" -F 199 --session "$PREFIX-rec" -- "$PY" \
	"$TESTDIR/torch_phases.py" --iterations 30 --torch-profiler "$WORK/prof.json" \
	>"$WORK/rec.out" 2>"$WORK/rec.err"
ok $? "record of the PyTorch loop exits 0 ($(tail -n 3 "$WORK/rec.err" | tr '\n' ' ' | cut -c1-200))"
[ -s "$WORK/prof.json" ]
ok $? "torch.profiler measured the same run ($(tail -n 1 "$WORK/rec.out" | cut -c1-200))"
"$PY" - "$WORK/rec/flame.folded" "$WORK/prof.json" >"$WORK/cmp.txt" 2>&1 <<'PYEOF'
import json, sys
PY = "[py] "
phases = {"forward_phase": "forward", "backward_phase": "backward", "optimizer_phase": "optimizer"}
step = 0
under = dict.fromkeys(phases, 0)
torch_below = dict.fromkeys(phases, 0)
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    stack, _, w = line.rstrip("\n").rpartition(" ")
    if not w.isdigit():
        continue
    w = int(w)
    fr = stack.split(";")
    names = [f[len(PY):].rsplit(" (", 1)[0] if f.startswith(PY) else None for f in fr]
    if "train_step" not in names:
        continue
    step += w
    for p in phases:
        if p in names:
            under[p] += w
            rest = fr[names.index(p) + 1:]
            if any("at::" in f or "torch::" in f or "c10::" in f for f in rest):
                torch_below[p] += w
prof = json.load(open(sys.argv[2]))
tot = sum(under.values())
ours = {phases[p]: under[p] / tot if tot else 0 for p in phases}
print("train_step", step, "under the phases %.3f" % (tot / step if step else 0),
      "ours", {k: round(v, 3) for k, v in ours.items()},
      "torch.profiler", {k: round(v, 3) for k, v in prof.items()},
      "libtorch below", {p: round(torch_below[p] / under[p], 2) if under[p] else 0 for p in phases})
ok = step > 0 and tot >= 0.8 * step
ok = ok and all(abs(ours[k] - prof.get(k, 0)) <= 0.10 for k in ours)
ok = ok and all(torch_below[p] >= 0.5 * under[p] for p in ("forward_phase", "backward_phase"))
sys.exit(0 if ok else 1)
PYEOF
ok $? "the phases under their Python functions with libtorch below, shares as torch.profiler's: $(cat "$WORK/cmp.txt")"
echo "1..$n"
[ "$failed" = 0 ]
