#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of the CFI fuzz target (cfi_fuzz.c) into corpus/cfi/.

Run by hand when the input format changes, then commit the files; CI only replays them:

    /usr/bin/python3 tests/fuzz/cfi_seeds.py [CC]

Seeds: the CFI sections of two tiny shared objects compiled here (gcc by default): one with
.eh_frame and .eh_frame_hdr (a dozen FDEs: the start files', a leaf, a function saving
registers, early returns, a realigned stack, calls through the PLT), one with .debug_frame only; each read
through the hdr, through the index, or both; then broken copies (cut short, lengths and CIE
pointers bent, bytes flipped). Files named crash-*, leak-*, timeout-* or found-* come from
fuzzing runs and are kept as they are.
"""

import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "cfi")

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
long leaf(long x) { __asm__ volatile("" : "+r"(x)); return x * 3; }
long saves(long a, long b) {
	long s = 0, i;
	for (i = 0; i < a; i++) s += leaf(a + i) * b + leaf(s);
	return s;
}
long use(char *p, long n) { __asm__ volatile("" : : "r"(p) : "memory"); return p[0] + n; }
long realigned(int n) {
	char __attribute__((aligned(64))) buf[100];
	char *p = __builtin_alloca((unsigned long)n);
	buf[0] = (char)n; p[0] = 1;
	return use(buf, n) + use(p, n) + saves(n, n);
}
void say(const char *s) { puts(s); if (!s[0]) abort(); }
long branchy(long a, long b, long c) {
	long x, y;
	if (a < 0) return leaf(b);
	x = saves(a, b); y = saves(b, c);
	if (x > y) return x - leaf(y);
	return y + saves(x, c) + realigned((int)c);
}
"""

F_HDR, F_EH, F_DEBUG, F_INDEX = 1, 2, 4, 8


def sections(path):
    """{name: (addr, bytes)} of an ELF64 little-endian file's sections."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = shdrs[shstrndx]
    out = {}
    for name, typ, _flags, addr, off, size, *_ in shdrs:
        end = data.index(b"\0", strtab[4] + name)
        key = data[strtab[4] + name:end].decode()
        out[key] = (addr, data[off:off + size] if typ != 8 else b"")
    return out


def seed(flags, secs, probe, stride=4):
    hdr_addr, hdr = secs.get(".eh_frame_hdr", (0, b""))
    eh_addr, eh = secs.get(".eh_frame", (0, b""))
    _, dbg = secs.get(".debug_frame", (0, b""))
    head = struct.pack("<BBHHIII", flags, stride - 1, len(hdr), len(eh), hdr_addr, eh_addr, probe)
    return head + hdr + eh + dbg


def build(cc, tmp, name, flags):
    src = os.path.join(tmp, "seed.c")
    with open(src, "w") as f:
        f.write(SOURCE)
    out = os.path.join(tmp, name)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", out, src] + flags, check=True)
    return sections(out)


def main():
    cc = sys.argv[1] if len(sys.argv) > 1 else "gcc"
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if not f.startswith(("crash-", "leak-", "timeout-", "found-")):
            os.unlink(os.path.join(OUT, f))
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        eh = build(cc, tmp, "eh.so", [])
        dbg = build(cc, tmp, "dbg.so", ["-fno-asynchronous-unwind-tables", "-g", "-nostartfiles"])
    text = eh[".text"][0]
    seeds["eh_hdr"] = seed(F_HDR | F_EH, eh, text)
    seeds["eh_hdr_index"] = seed(F_HDR | F_EH | F_INDEX, eh, text)
    seeds["eh_index"] = seed(F_EH | F_INDEX, eh, text)
    seeds["eh_plt"] = seed(F_HDR | F_EH, eh, eh[".plt"][0], 1)
    seeds["debug_index"] = seed(F_DEBUG | F_INDEX, dbg, dbg[".text"][0], 2)
    both = dict(eh)
    both[".debug_frame"] = dbg[".debug_frame"]
    seeds["eh_hdr_debug_index"] = seed(F_HDR | F_EH | F_DEBUG | F_INDEX, both, text)

    # broken copies of the .eh_frame seed: cut short, then bent where the parser looks
    rng = random.Random(1)
    base = seeds["eh_hdr_index"]
    hdr_len, eh_len = struct.unpack_from("<HH", base, 2)
    eh_at = 18 + hdr_len
    for cut in (eh_len // 3, eh_len // 2, eh_len - 5):
        s = bytearray(base[:eh_at + cut])
        seeds["eh_cut_%d" % cut] = bytes(s)
    first_fde = eh_at + 4 + struct.unpack_from("<I", base, eh_at)[0]
    bends = {
        "fde_len_reserved": (first_fde, struct.pack("<I", 0xFFFFFFF0)),
        "fde_len_64": (first_fde, struct.pack("<I", 0xFFFFFFFF)),
        "fde_cie_self": (first_fde + 4, struct.pack("<I", 4)),
        "fde_cie_far": (first_fde + 4, struct.pack("<I", 0x7FFFFFFF)),
        "cie_version": (eh_at + 8, b"\x07"),
        "cie_aug_len": (eh_at + 15, b"\xff\xff\xff\xff\x0f"),
        "hdr_count": (18 + 8, struct.pack("<I", 0xFFFFFF)),
        "hdr_table_enc": (18 + 3, b"\x1b"),
    }
    for name, (at, patch) in bends.items():
        s = bytearray(base)
        s[at:at + len(patch)] = patch
        seeds[name] = bytes(s)
    for i in range(6):
        s = bytearray(base)
        for _ in range(8):
            s[rng.randrange(eh_at, len(s))] = rng.randrange(256)
        seeds["flipped_%d" % i] = bytes(s)

    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds, %d bytes in %s" % (len(seeds), sum(map(len, seeds.values())), OUT))


if __name__ == "__main__":
    main()
