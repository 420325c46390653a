#!/bin/bash
# scripts/gpu-bundle on this build tree: the bundle holds what docs/gpu.md says, fits in
# 64 MiB, takes no base-system library, and in an empty environment (env -i) with its env
# file runs xpusup from the bundle, moved elsewhere too; gpu-check without a GPU exits 77;
# a folder that is not a bundle is not overwritten; a sanitizer build is refused. TAP on
# stdout.
#
# Usage: gpu_bundle_test.sh SOURCE_ROOT BUILD_ROOT with-cupti|no-cupti with-nvcc|no-nvcc
set -u
root=${1:?usage: gpu_bundle_test.sh SOURCE_ROOT BUILD_ROOT with-cupti|no-cupti with-nvcc|no-nvcc}
build=${2:?} cupti=${3:?} nvcc=${4:?}
work=$(mktemp -d /tmp/gpu_bundle_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0
failed=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=1
		[ -n "${3:-}" ] && printf '%s\n' "$3" | tail -n 20 | sed 's/^/#   /'
	fi
	return 0
}
echo "TAP version 13"

# A sanitizer build is not bundled (its programs need the sanitizer runtimes, and measure
# the sanitizer): gpu-bundle must refuse it, and that is all there is to test in it.
if ldd "$build/cli/xpusup" | grep -q 'lib[at]san\|libubsan'; then
	res=$("$root/scripts/gpu-bundle" -B "$build" "$work/bundle" 2>&1)
	rc=$?
	ok "$([ $rc = 100 ] && [ ! -e "$work/bundle" ] && echo 0 || echo 1)" \
		"a sanitizer build is refused (exit 100, no bundle)" "$res"
	echo "$res" | grep -q 'sanitizer build'
	ok $? "gpu-bundle says it is a sanitizer build" "$res"
	echo "1..$n"
	exit $failed
fi

opts=()
[ "$cupti" = with-cupti ] || opts+=(--no-cupti)
[ "$nvcc" = with-nvcc ] || opts+=(--no-workload)
b=$work/bundle
out=$("$root/scripts/gpu-bundle" -B "$build" "${opts[@]}" "$b" 2>&1)
rc=$?
ok $rc "gpu-bundle -B $build ${opts[*]}" "$out"
if [ $rc != 0 ]; then
	echo "Bail out! no bundle to check"
	exit 1
fi
printf '%s\n' "$out" | sed 's/^/# /'

size=$(du -sb "$b" | cut -f1)
[ "$size" -le $((64 * 1024 * 1024)) ]
ok $? "the bundle fits in 64 MiB ($((size / 1024)) KiB)"

want=(xpusup env gpu-check gpu-overhead MANIFEST README.md tests/check_trace.py tests/torch_loop.py
	tests/workload.cu tests/timeline_check.py lib/libxpusup_annotate.so)
for a in cpu pmu inproc cupti correlator folded timeline stats; do want+=("actors/xpusup-$a"); done
[ "$cupti" = with-cupti ] && want+=(lib/libxpusup_cupti.so)
[ "$nvcc" = with-nvcc ] && want+=(tests/cuda_workload tests/expect.json)
miss=
for f in "${want[@]}"; do [ -e "$b/$f" ] || miss="$miss $f"; done
ok "$([ -z "$miss" ] && echo 0 || echo 1)" "the bundle holds ${#want[@]} named files" "missing:$miss"

miss=
for l in libbpf.so.1 libnng.so.1 liburing.so.2 libdw.so.1 libelf.so.1; do
	[ -f "$b/lib/$l" ] || miss="$miss $l"
done
ok "$([ -z "$miss" ] && echo 0 || echo 1)" "libbpf, libnng, liburing, libdw, libelf are in lib/" "missing:$miss"
extra=$(find "$b/lib" -mindepth 1 -printf '%f\n' |
	grep -E '^(libc|libm|libpthread|libdl|ld-linux.*|libcuda|libcupti|libstdc\+\+|libgcc_s)\.so' || true)
ok "$([ -z "$extra" ] && echo 0 || echo 1)" "no base-system, CUDA driver or CUPTI library in lib/" "$extra"

help=$(env -i bash -c ". '$b/env' && xpusup --help" 2>&1)
ok $? "env -i, the bundle's env: xpusup --help" "$help"
echo "$help" | grep -q 'record'
ok $? "xpusup --help describes record" "$help"
where=$(env -i bash -c ". '$b/env' && command -v xpusup && ldd '$b/actors/xpusup-cpu' | grep libbpf && echo \"\$XPUSUP_ACTOR_PATH \$XPUSUP_CUPTI_LIB\"" 2>&1)
echo "$where" | grep -q "^$b/xpusup$" && echo "$where" | grep -q "=> $b/lib/libbpf.so.1" &&
	echo "$where" | grep -q "^$b/actors $b/lib/libxpusup_cupti.so$"
ok $? "xpusup, the cpu actor's libbpf, the actors and the CUPTI library are the bundle's" "$where"
notfound=$(env -i bash -c ". '$b/env' && for f in '$b'/xpusup '$b'/actors/* '$b'/lib/*; do ldd \"\$f\"; done" 2>&1 |
	grep 'not found' | grep -v 'libcupti' || true)
ok "$([ -z "$notfound" ] && echo 0 || echo 1)" "every bundled program and library finds its libraries" "$notfound"

mv "$b" "$work/moved"
where=$(env -i bash -c ". '$work/moved/env' && xpusup --help >/dev/null && echo \"\$XPUSUP_ACTOR_PATH\"" 2>&1)
ok "$([ "$where" = "$work/moved/actors" ] && echo 0 || echo 1)" "moved elsewhere, the env file follows it" "$where"
mv "$work/moved" "$b"

if [ "$nvcc" = with-nvcc ]; then
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); sys.exit(e["kernel_count"] != 200)' "$b/tests/expect.json"
	ok $? "tests/expect.json is the workload's --expect"
fi

if command -v nvidia-smi >/dev/null; then
	echo "ok $((n += 1)) - # SKIP gpu-check without a GPU: this machine has nvidia-smi"
else
	res=$(env -i bash -c ". '$b/env' && '$b/gpu-check' '$work/check-out'" 2>&1)
	rc=$?
	ok "$([ $rc = 77 ] && echo 0 || echo 1)" "gpu-check without a GPU: exit 77 (got $rc)" "$res"
	echo "$res" | grep -q 'gpu-check: no GPU: nvidia-smi is not installed' &&
		[ -s "$work/check-out/machine.txt" ]
	ok $? "gpu-check says why, and wrote machine.txt" "$res"
fi
"$b/gpu-check" --bogus >/dev/null 2>&1
ok "$([ $? = 100 ] && echo 0 || echo 1)" "gpu-check with a wrong option: exit 100"

# gpu-overhead (bench/gpu_overhead.sh): its usage checked before anything runs, and no
# PyTorch with CUDA here is exit 77 with the reason
lib=$b/xpusup # any readable file: the names are refused first
for bad in "-r 0" "-n x" "--lib nameonly" "--lib a=$work/no-such.so" "--lib min=$lib" \
	"--lib a=$lib --lib a=$lib" "--bogus"; do
	# shellcheck disable=SC2086 # the words of each bad command line
	env -i bash -c ". '$b/env' && '$b/gpu-overhead' $bad '$work/ovh'" >/dev/null 2>&1
	rc=$?
	ok "$([ $rc = 100 ] && echo 0 || echo 1)" "gpu-overhead $bad: exit 100 (got $rc)"
done
if command -v nvidia-smi >/dev/null; then
	echo "ok $((n += 1)) - # SKIP gpu-overhead without a GPU: this machine has nvidia-smi"
else
	res=$(env -i PATH="$PATH" bash -c ". '$b/env' && '$b/gpu-overhead' -r 1 '$work/ovh'" 2>&1)
	rc=$?
	ok "$([ $rc = 77 ] && echo 0 || echo 1)" "gpu-overhead without a GPU: exit 77 (got $rc)" "$res"
	echo "$res" | grep -q 'gpu-overhead: no GPU: PyTorch with CUDA is not usable here'
	ok $? "gpu-overhead says why" "$res"
fi

mkdir "$work/notabundle" && touch "$work/notabundle/keep"
res=$("$root/scripts/gpu-bundle" -B "$build" "${opts[@]}" "$work/notabundle" 2>&1)
rc=$?
ok "$([ $rc = 100 ] && [ -e "$work/notabundle/keep" ] && echo 0 || echo 1)" \
	"a folder that is not a bundle is left alone (exit 100)" "$res"
res=$("$root/scripts/gpu-bundle" -B "$build" "${opts[@]}" "$b" 2>&1)
ok $? "an earlier bundle is replaced" "$res"

echo "1..$n"
exit $failed
