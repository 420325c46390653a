#!/bin/bash
# What `xpusup record` costs a PyTorch training loop, on a GPU machine, from a bundle made by
# scripts/gpu-bundle (this file is copied into it as gpu-overhead; docs/gpu.md). One plain
# run of a loop differs from the next by up to ±20 % on a lent VM, so the runs alternate,
# round after round: plain, record, record with each --lib, with --parts record with parts
# of its pipeline left out, torch.profiler. Each variant's figure is the median over the
# rounds of torch_loop.py's median iteration time, and its ratio to plain's.
#
# Usage: gpu-overhead [-b BUNDLE] [-n ITERATIONS] [-r ROUNDS] [--lib NAME=PATH]... [--parts]
#                     [OUT_DIR]
#   -b BUNDLE        the bundle (default: the folder this script is in)
#   -n ITERATIONS    timed iterations of torch_loop.py per run (default 200, after 10)
#   -r ROUNDS        rounds (default 3)
#   --lib NAME=PATH  also record with this CUPTI injection library (another build of
#                    libxpusup_cupti.so, for an A/B), shown as record-NAME
#   --parts          also record without launch stacks (nostacks), without the API
#                    activity kinds (noapi: kernel, memcpy, memset, sync, nvtx only), and
#                    without both (min), through `record -c`
#   OUT_DIR          where the runs and overhead.txt, overhead.json go (default: $OUT when
#                    set, else ./gpu-overhead-out)
# Exit: 0 done; 1 a run failed (overhead.txt says which); 77 no GPU or no PyTorch with CUDA;
# 100 usage; 111 the bundle is unusable.
set -euo pipefail

die() {
	echo "gpu-overhead: unable to $1" >&2
	exit "${2:-111}"
}
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 100
}

bundle=$(cd "$(dirname "$0")" && pwd)
iterations=200
rounds=3
parts=0
libs=()
out=${OUT:-$PWD/gpu-overhead-out}
while [ $# -gt 0 ]; do
	case $1 in
	-b)
		[ $# -ge 2 ] || usage
		bundle=$(cd "$2" 2>/dev/null && pwd) || die "use $2: no such folder" 100
		shift
		;;
	-n | -r)
		[ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || usage
		if [ "$1" = -n ]; then iterations=$2; else rounds=$2; fi
		shift
		;;
	--lib)
		[ $# -ge 2 ] && [[ $2 =~ ^[A-Za-z0-9_]+=. ]] || usage
		case ${2%%=*} in
		nostacks | noapi | min) die "name a library otherwise than ${2%%=*}: --parts uses it" 100 ;;
		esac
		for l in "${libs[@]}"; do
			[ "${l%%=*}" != "${2%%=*}" ] || die "name each library once: ${2%%=*} twice" 100
		done
		[ -r "${2#*=}" ] || die "read ${2#*=}" 100
		libs+=("$2")
		shift
		;;
	--parts) parts=1 ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) out=$1 ;;
	esac
	shift
done
[ -r "$bundle/env" ] || die "use $bundle: not a bundle (no env file)" 100
# shellcheck disable=SC1091
. "$bundle/env"
python=$(command -v python3) || die "find python3"
loop=("$python" "$bundle/tests/torch_loop.py" --iterations "$iterations")
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "gpu-overhead: no GPU: PyTorch with CUDA is not usable here" >&2
	exit 77
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# A crash of the profiled loop says where it was (Python's frames on stderr, at no cost
# until then): one run of 26 died of SIGSEGV on an H200 with nothing else to go on.
export PYTHONFAULTHANDLER=1

# The built-in pipeline as record writes it, changed in its cupti source for --parts.
variants=(plain record)
for l in "${libs[@]}"; do variants+=("record-${l%%=*}"); done
if [ $parts = 1 ]; then
	xpusup record -o "$out/conf" -- true >/dev/null 2>&1 || die "run xpusup record -- true"
	gpu_conf() { # NAME LINES...: the built-in pipeline with LINES added to [source gpu]
		local name=$1
		shift
		awk -v add="$(printf '%s\n' "$@")" '{print} $0 == "kind = cupti" {print add}' \
			"$out/conf/pipeline.conf" >"$out/$name.conf"
	}
	gpu_conf nostacks "launch_stacks = no"
	gpu_conf noapi "activities = kernel, memcpy, memset, sync, nvtx"
	gpu_conf min "activities = kernel, memcpy, memset, sync, nvtx" "launch_stacks = no"
	variants+=(record-nostacks record-noapi record-min)
fi
variants+=(profiler)

failed=()
for round in $(seq 1 "$rounds"); do
	for v in "${variants[@]}"; do
		dir=$out/$v-$round
		mkdir -p "$dir"
		lib=$XPUSUP_CUPTI_LIB
		args=()
		case $v in
		record-nostacks | record-noapi | record-min)
			# the config's relative paths are its folder's: the run's
			cp "$out/${v#record-}.conf" "$dir/pipeline.conf"
			args=(-c "$dir/pipeline.conf")
			;;
		record-*)
			for l in "${libs[@]}"; do [ "record-${l%%=*}" = "$v" ] && lib=${l#*=}; done
			;;
		esac
		rc=0
		case $v in
		plain) "${loop[@]}" --json "$dir/loop.json" >"$dir/out.txt" 2>&1 || rc=$? ;;
		profiler) "${loop[@]}" --torch-profiler --json "$dir/loop.json" >"$dir/out.txt" 2>&1 || rc=$? ;;
		*)
			(cd "$dir" && XPUSUP_CUPTI_LIB=$lib xpusup record "${args[@]}" -o "$dir/record" -- \
				env LD_LIBRARY_PATH="$XPUSUP_CMD_LD_LIBRARY_PATH" "${loop[@]}" \
				--json "$dir/loop.json" >"$dir/out.txt" 2>&1) || rc=$?
			;;
		esac
		[ $rc = 0 ] || failed+=("$v round $round: exit $rc (see $dir/out.txt)")
		echo "gpu-overhead: round $round $v: $(grep -o 'median [0-9.]* ms' "$dir/out.txt" | tail -n 1 || echo "exit $rc")"
	done
done

"$python" - "$out" "$rounds" "${variants[@]}" <<'PYEOF'
import json, os, statistics, sys

out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = {}
for v in variants:
    got = []
    for r in range(1, rounds + 1):
        try:
            with open(os.path.join(out, f"{v}-{r}", "loop.json")) as f:
                got.append(json.load(f)["median_ms"])
        except (OSError, ValueError, KeyError):
            pass
    med[v] = got
base = statistics.median(med["plain"]) if med["plain"] else None
rows, lines = {}, [f"torch_loop.py, {rounds} rounds: median over the rounds of each run's "
                   f"median ms per iteration; ratio to plain; range over the rounds"]
for v in variants:
    if not med[v]:
        lines.append(f"  {v:18s} (no figures)")
        continue
    m = statistics.median(med[v])
    ratio = m / base if base else None
    rows[v] = {"median_ms": m, "ratio": ratio, "rounds_ms": med[v]}
    lines.append(f"  {v:18s} {m:8.3f} ms  x{ratio:.3f}  [{min(med[v]):.3f} - {max(med[v]):.3f}]"
                 if ratio else f"  {v:18s} {m:8.3f} ms")
with open(os.path.join(out, "overhead.json"), "w") as f:
    json.dump({"rounds": rounds, "variants": rows}, f, indent=1)
    f.write("\n")
with open(os.path.join(out, "overhead.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
if [ ${#failed[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failed[@]}" | tee -a "$out/overhead.txt"
	exit 1
fi
