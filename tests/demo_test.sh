#!/bin/bash
# The demo's GPU half reads as the README tells it: the synthetic source's `story` (the
# training loop of examples/synthetic.conf) through real sessions to the folded sink. Its
# frames carry function names, which come the way real frames' names come (a symbol file the
# source reports in MODULE records, the correlator's symbolizer, the wire's frame-name table):
# no frame is a bare address; each kernel sits under the code path that launched it; GPU time
# is a readable share of the flame graph, not a sliver. Then examples/synthetic.conf itself,
# run as scripts/demo runs it. TAP on stdout.
#
# Usage: demo_test.sh XPUSUP_BINARY EXAMPLES_SYNTHETIC_CONF
set -u
XPUSUP=${1:?usage: demo_test.sh XPUSUP_BINARY EXAMPLES_SYNTHETIC_CONF}
DEMO_CONF=${2:?usage: demo_test.sh XPUSUP_BINARY EXAMPLES_SYNTHETIC_CONF}
. "$(dirname "$0")/session_lib.sh"
session_lib_init demotest d

# The checks on a flame.folded of the story: prints "True ..." when they hold, else what
# failed. EXACT: the launch count, to compare GPU time with the source's own rules.
cat >"$WORK/story.py" <<'PYEOF'
import re, sys
path, exact = sys.argv[1], int(sys.argv[2])
# synthetic.c's story: the code path of each kernel, its typical length in microseconds
launched_by = {
    '[gpu] conv2d_fwd_kernel': ['main', 'train_step', 'forward', 'conv2d', 'cudaLaunchKernel'],
    '[gpu] gemm_grad_kernel': ['main', 'train_step', 'backward', 'gemm_grad', 'cudaLaunchKernel'],
    '[gpu] adam_step_kernel': ['main', 'train_step', 'optimizer_step', 'cudaLaunchKernel'],
}
typical_us = [800, 1000, 400]
bad, per_kernel, gpu, total = [], dict.fromkeys(launched_by, 0), 0, 0
for line in open(path).read().splitlines():
    stack, w = line.rsplit(' ', 1)
    w = int(w)
    total += w
    frames = [f for f in stack.split(';')[1:] if not f.startswith('[range] ')]
    if any(re.fullmatch(r'0x[0-9a-f]+(_\[k\])?', f) or f == '[unknown]' for f in frames):
        bad.append('unnamed frame: ' + line)
    if not frames or not frames[-1].startswith('[gpu]'):
        continue
    gpu += w
    if frames[0] == '[gpu] no launch stack':
        continue # missing_launch_pct: its launch records were left out on purpose
    leaf = frames[-1]
    if leaf in launched_by:
        per_kernel[leaf] += w
        if frames[:-1] != launched_by[leaf]:
            bad.append('kernel not under its launching code: ' + line)
    elif leaf not in ('[gpu] memcpy HtoD', '[gpu] memset', '[gpu] no launch stack'):
        bad.append('unexpected GPU leaf: ' + line)
if exact:
    # launch u: memset when u % 8 == 7, memcpy when u % 4 == 3, else the kernel of path u % 3
    # lasting typical_us * (75 + u % 50) / 100
    names = list(launched_by)
    want = dict.fromkeys(names, 0)
    for u in range(exact):
        if u % 8 != 7 and u % 4 != 3:
            want[names[u % 3]] += typical_us[u % 3] * 10 * (75 + u % 50)
    if want != per_kernel:
        bad.append(f'kernel time {per_kernel}, the source made {want}')
share = gpu / total if total else 0
# readable: GPU work near half the graph, and each kernel wider than a sliver (1/50)
if not 0.3 <= share <= 0.7:
    bad.append(f'GPU share {share:.3f}')
for k, w in per_kernel.items():
    if w < total / 50:
        bad.append(f'{k} is a sliver: {w} of {total}')
print(not bad, f'gpu_share={share:.2f}', *bad[:5])
PYEOF
flame_ok() { # flame_ok LABEL FLAME_FOLDED EXACT
	local got
	got=$("$PY" "$WORK/story.py" "$2" "$3" 2>&1)
	[ "${got%% *}" = True ]
	ok $? "$1: named frames, each kernel under its launching code, GPU a readable share ($got)"
}

# ---- the story, deterministic --------------------------------------------------------
s="$PREFIX-story"
mkdir -p "$WORK/story"
{ printf '[sink flame]\nkind = folded\npath = story/flame.folded\nsnapshot_s = 0\n'
  synthetic 2400 | sed 's/answer_frame = no/story = yes/'; } >"$WORK/story.conf"
"$XPUSUP" start "$WORK/story.conf" --session "$s" >/dev/null 2>&1
ok $? "story: a session with story = yes starts"
# every record but the MODULE records (3 per process: for the correlator) is an event
wait_for 30 "$s" "c('syn', 'launches') == 2400 and sum_('modules') == 12 and c('flame', 'events_in') == c('syn', 'records_out') - 12"
ok $? "story: the correlators took the 12 MODULE records, the sink every event ($(json "$s" "sum_('modules'), c('flame', 'events_in'), c('syn', 'records_out')"))"
# The symbol file read by binutils, a reader independent of the symbolizer's elfutils: each
# function's symbol starts 0x80 before the address the source puts in its stacks.
got=$({ readelf -lSW "$BASE/$s/syn.symbols" 2>&1 | grep -i 'warning\|error'
	nm --defined-only "$BASE/$s/syn.symbols" 2>&1; } | "$PY" -c "
import sys
got = sorted(l.split() for l in sys.stdin.read().splitlines())
want = sorted([f'{a - 0x80:016x}', 'T', n] for a, n in [
    (0x401a20, 'main'), (0x402b40, 'train_step'), (0x403c10, 'forward'), (0x404d80, 'conv2d'),
    (0x405e30, 'backward'), (0x406f50, 'gemm_grad'), (0x407a70, 'optimizer_step'),
    (0x7f3a0f8a1c30, 'cuLaunchKernel'), (0x7f3a10021e40, 'cudaLaunchKernel'),
    (0x7f3a10022010, 'cudart::cudaApiLaunchKernel')])
print(got == want, len(got), [l for l in got if l not in want][:3])")
[ "${got%% *}" = True ]
ok $? "story: readelf takes the symbol file without a warning, nm lists its 10 functions ($got)"
got=$(json "$s" "sum_('frames'), sum_('frames_unknown'), sum_('module_frames')")
read -r frames unknown module_frames <<<"$got"
[ "$frames" -gt 0 ] && [ "$unknown" = 0 ] && [ "$module_frames" = "$frames" ]
ok $? "story: the symbolizer named every frame from the reported symbol file (frames, unknown, module_frames: $got)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "story"
flame_ok "story (kernel time as the source made it)" "$WORK/story/flame.folded" 2400

# ---- examples/synthetic.conf as scripts/demo runs it ----------------------------------
s="$PREFIX-demo"
mkdir -p "$WORK/demo"
cp "$DEMO_CONF" "$WORK/demo/synthetic.conf" # its outputs go to out/ beside it
"$XPUSUP" start "$WORK/demo/synthetic.conf" --session "$s" >/dev/null 2>&1
ok $? "demo: examples/synthetic.conf starts"
sleep 3
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "demo"
flame_ok "demo" "$WORK/demo/out/flame.folded" 0
html="$WORK/demo/out/flame.html"
[ -s "$html" ] && grep -q 'conv2d_fwd_kernel' "$html" && ! grep -q '0x401a20' "$html"
ok $? "demo: flame.html shows the names"

echo "1..$n"
[ $failed = 0 ]
