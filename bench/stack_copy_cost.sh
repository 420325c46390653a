#!/bin/bash
# stack_copy_cost: what the cpu source's BPF sampler costs per sample, walking user stacks with
# frame pointers (unwind = fp) and copying them (unwind = dwarf) at stack_bytes 16384 and
# 32768 (docs/cpu.md, "Cost"). The kernel's own BPF statistics (kernel.bpf_stats_enabled=1,
# restored after) give run_time_ns and run_cnt of profile_sample, read with bpftool while the
# session still runs, one second after the workload has ended (so every one of its samples
# has reached the actor's `samples` counter).
#
# Samples of other processes (a shared machine) run the program too, and return at the target
# filter: a first run on a sleeping target gives that cost per run (t_f), taken out:
#   ns per sample = (run_time_ns - (run_cnt - samples) * t_f) / samples
#
# Two workloads, sampled at 999 Hz for 8 s in a session of the cpu source (target = their
# pids) and a test correlator, each mode twice:
#   hotspots  tests/workloads/hotspots --threads 2: 9 frames of frame-pointer code; its
#             threads' stacks hold 8-9 KiB from sp to their top, so the copies stop there
#   deep      two processes spinning under 48 recursive frames of 1 KiB (built here from
#             the C below with cc -O1): every copy is a full stack_bytes
#
# Usage: bench/stack_copy_cost.sh [--build DIR]     (as root; default build/release)
set -u
BUILD=build/release
[ "${1:-}" = --build ] && BUILD=${2:?--build needs a folder}
XPUSUP=$BUILD/cli/xpusup
HOTSPOTS=$BUILD/tests/workloads/hotspots
[ -x "$HOTSPOTS" ] || { echo "stack_copy_cost: no $HOTSPOTS (build it first)" >&2; exit 100; }
# shellcheck source=bench/bpf_cost_lib.sh
. "$(dirname "$0")/bpf_cost_lib.sh"
bpf_cost_init stack_copy_cost

cat >"$TMP/deep.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(double secs)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
}
__attribute__((noinline)) static void deep(int frames, double secs)
{
	volatile char pad[1024];
	memset((char *)pad, 1, sizeof(pad));
	if (frames > 1)
		deep(frames - 1, secs);
	else
		spin(secs);
	sink += pad[0];
}
int main(int argc, char **argv)
{
	deep(atoi(argv[1]), atof(argv[2]));
	return 0;
}
EOF
cc -O1 -o "$TMP/deep" "$TMP/deep.c" || exit 111

# (into a file, not a pipe: the next run must not start before this one's session stopped)
bpf_cost_run "unwind = fp" "samples" "sleep 30" >"$TMP/run"
read -r n t _ <"$TMP/run"
tf=$((t / n))
echo "filtered runs (a sleeping target): $tf ns per run over $n runs"
echo "| workload | mode | ns per sample | runs | samples | mean copy | bpf_drops |"
echo "|---|---|---:|---:|---:|---:|---:|"
for w in hotspots deep; do
	if [ $w = hotspots ]; then
		cmds=("$HOTSPOTS --seconds 12 --threads 2")
	else
		cmds=("$TMP/deep 48 12" "$TMP/deep 48 12")
	fi
	for key in "unwind = fp" "stack_bytes = 16384" "stack_bytes = 32768"; do
		for _rep in 1 2; do
			bpf_cost_run "$key" "samples stack_copies stack_copy_kib bpf_drops" "${cmds[@]}" >"$TMP/run"
			read -r n t s c kib drops <"$TMP/run"
			[ "${s:-0}" -gt 0 ] || { echo "stack_copy_cost: no samples" >&2; exit 111; }
			echo "| $w | $key | $(((t - (n - s) * tf) / s)) | $n | $s |" \
				"$([ "$c" -gt 0 ] && echo "$((kib * 1024 / c)) B" || echo -) | $drops |"
		done
	done
done
