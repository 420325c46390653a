#!/bin/sh
# Writes the seed corpus of cfi_walk_fuzz (tests/fuzz/corpus/cfi_walk): the .eh_frame_hdr, .eh_frame
# and .debug_frame of small programs built here, in cfi_walk_fuzz.c's input layout, whole and in
# the combinations the reader takes (table and frames, frames alone, .debug_frame alone).
# Usage: tests/fuzz/gen_cfi_walk_corpus.sh [OUTDIR]   (needs gcc and objcopy)
set -eu
out=${1:-$(dirname "$0")/corpus/cfi_walk}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cat >"$tmp/p.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long leaf(long x) { volatile long v = x; return v * 3; }
__attribute__((noinline)) long mid(long x, long *a) { long s = 0; for (long i = 0; i < x; i++) s += a[i % 4] + leaf(i); return s; }
__attribute__((noinline)) long big(long n) { long *a = alloca((size_t)(n + 4) * 8); for (long i = 0; i < n + 4; i++) a[i] = i; return mid(n, a); }
int main(int argc, char **argv) { (void)argv; printf("%ld\n", big(argc * 100)); return 0; }
CEOF
# section NAME of FILE, or nothing
sect() { rm -f "$tmp/s"; objcopy --dump-section "$2=$tmp/s" "$1" "$tmp/junk" 2>/dev/null && cat "$tmp/s" || true; }
# one input: flags, then the sections' lengths, a seed, the bytes
emit() { # NAME FLAGS HDR EH DEBUG SEED
	python3 - "$out/$1" "$2" "$3" "$4" "$5" "$6" <<'PYEOF'
import sys
name, flags, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[6])
parts = [open(p, "rb").read() for p in sys.argv[3:6]]
hdr, eh, dbg = parts
assert len(hdr) < 65536 and len(eh) < 65536
open(name, "wb").write(bytes([flags]) + len(hdr).to_bytes(2, "little") +
                      len(eh).to_bytes(2, "little") + bytes([seed]) + hdr + eh + dbg)
PYEOF
}
for v in "O2:-O2" "O0:-O0 -fno-omit-frame-pointer" "realign:-O2 -mstackrealign -mavx"; do
	name=${v%%:*}
	gcc ${v#*:} -o "$tmp/p-$name" "$tmp/p.c"
	sect "$tmp/p-$name" .eh_frame_hdr >"$tmp/hdr"
	sect "$tmp/p-$name" .eh_frame >"$tmp/eh"
	: >"$tmp/none"
	emit "$name-hdr-eh" 3 "$tmp/hdr" "$tmp/eh" "$tmp/none" 17
	emit "$name-eh-only" 2 "$tmp/none" "$tmp/eh" "$tmp/none" 91
done
gcc -O2 -g -fno-asynchronous-unwind-tables -fno-exceptions -c -o "$tmp/d.o" "$tmp/p.c"
sect "$tmp/d.o" .debug_frame >"$tmp/dbg"
emit "debug-frame" 4 "$tmp/none" "$tmp/none" "$tmp/dbg" 5
ls -l "$out"
