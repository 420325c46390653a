#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the CPU source's records as they left it: a replay file that a [correlator] of kind
test wrote (docs/pipeline.md, `dump`), read here with struct, independently of
include/xpusup/event.h's C helpers.

  stack_copies.py samples REPLAY MODE PID MAPS STACK_BYTES
      MODE dwarf: PID's CPU_SAMPLEs carry XPU_STACK_F_COPY with no user frames; each copy is
      well formed (len a multiple of 8 in 1..STACK_BYTES, the record exactly that long), ip
      is in an executable mapping of PID (MAPS: a copy of /proc/PID/maps), sp in a writable
      one, and the frame-pointer chain of the workload (built with frame pointers) can be
      walked inside the copy to return addresses in executable mappings.
      MODE fp: no record carries a copy, and the samples have user frames.
  stack_copies.py launches REPLAY N
      dwarf launches of tests/cpu/launcher: N LAUNCH records with ids 1001..1000+N, each
      with a copy taken at the marker's entry: the same ip every time, sp 8 past a
      16-byte boundary (the call pushed the return address), and as the first word one of
      the two return addresses into launcher_launch_even/odd.
  stack_copies.py modules REPLAY PROGRAM N
      libraries loaded after exec: each of the N or more processes that exec'd PROGRAM
      (PROC_EXEC records) has a MODULE record of its libc, mapped executable by ld.so: an
      absolute path, a page-aligned range, the file's device and inode as stat gives them.
  stack_copies.py no-modules REPLAY PROGRAM N
      follow_mmap = off: N or more processes exec'd PROGRAM and none of them has a MODULE
      record.
Prints what it found; exits 0 when every check holds.
"""
import os
import struct
import sys

REC_CPU_SAMPLE, REC_LAUNCH, REC_PROC_EXEC, REC_MODULE = 2, 3, 12, 17
STACK_F_COPY = 1 << 8
REPLAY_MAGIC = 0x314C504552555058
COPY_MAX = 32768


def records(path):
    data = open(path, "rb").read()
    magic, _abi, _ = struct.unpack_from("<QII", data, 0)
    assert magic == REPLAY_MAGIC, "not a replay file"
    off = 16
    while off + 24 <= len(data):
        rtype, flags, size, ts, pid, tid = struct.unpack_from("<HHIQII", data, off)
        assert size >= 24 and size % 8 == 0 and off + size <= len(data), f"bad size at {off}"
        yield rtype, flags, pid, data[off:off + size]
        off += size


def parse(rtype, rec):
    """(frames, n_user, copy) of a sample or launch; copy is (ip, sp, fp, bytes) or None."""
    if rtype == REC_CPU_SAMPLE:
        n_kernel, n_user = struct.unpack_from("<HH", rec, 32)
        base = 56 + 8 * (n_kernel + n_user)
    else:
        (n_user,) = struct.unpack_from("<H", rec, 36)
        base = 40 + 8 * n_user
    flags = struct.unpack_from("<H", rec, 2)[0]
    if not flags & STACK_F_COPY:
        assert len(rec) == base, "a record without a copy is exactly its frames"
        return n_user, None
    ip, sp, fp, length, reserved = struct.unpack_from("<QQQII", rec, base)
    body = rec[base + 32:]
    assert reserved == 0 and 0 < length <= COPY_MAX and length % 8 == 0, (length, reserved)
    assert len(body) == length, ("record size", len(body), length)
    return n_user, (ip, sp, fp, body)


def load_maps(path):
    maps = []
    for line in open(path):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, f[1]))
    return maps


def in_maps(maps, addr, perm):
    return any(lo <= addr < hi and perm in p for lo, hi, p in maps)


def fp_frames(maps, sp, fp, body):
    """Return addresses found by walking saved frame pointers inside the copy."""
    n = 0
    while sp <= fp and fp + 16 <= sp + len(body) and n < 64:
        saved, ret = struct.unpack_from("<QQ", body, fp - sp)
        if not in_maps(maps, ret, "x"):
            break
        n += 1
        if saved <= fp:
            break
        fp = saved
    return n


def check_samples(path, mode, pid, maps_path, stack_bytes):
    maps = load_maps(maps_path)
    mine = [(t, r) for t, _f, p, r in records(path) if t == REC_CPU_SAMPLE and p == pid]
    parsed = [parse(t, r) for t, r in mine]
    copies = [c for _n, c in parsed if c]
    checks = {f"at least 50 samples of pid {pid} ({len(mine)})": len(mine) >= 50}
    if mode == "fp":
        any_copy = any(f & STACK_F_COPY for _t, f, _p, _r in records(path))
        with_user = sum(n > 0 for n, _c in parsed)
        checks["no record carries a copy"] = not any_copy
        checks[f"samples have user frames ({with_user}/{len(parsed)})"] = (
            with_user >= 0.9 * len(parsed))
    else:
        deep = sum(fp_frames(maps, sp, fp, b) >= 9 for _ip, sp, fp, b in copies)
        short = sum(len(b) < stack_bytes for _ip, _sp, _fp, b in copies)
        checks.update({
            f"samples carry a copy ({len(copies)}/{len(mine)})": len(copies) >= 0.95 * len(mine),
            "no user frames beside a copy": all(n == 0 for n, c in parsed if c),
            f"copies of at most stack_bytes = {stack_bytes}":
                all(len(b) <= stack_bytes for _ip, _sp, _fp, b in copies),
            "ip in an executable mapping":
                all(in_maps(maps, ip, "x") for ip, _sp, _fp, _b in copies),
            "sp 8-aligned in a writable mapping":
                all(sp % 8 == 0 and in_maps(maps, sp, "w") for _ip, sp, _fp, _b in copies),
            f"9+ frame-pointer frames inside the copy ({deep}/{len(copies)})":
                deep >= 0.8 * len(copies),
        })
        mean = sum(len(b) for *_x, b in copies) // max(1, len(copies))
        print(f"copies: {len(copies)}, mean {mean} bytes, {short} short of stack_bytes")
    return checks


def check_launches(path, n):
    launches = [r for t, _f, _p, r in records(path) if t == REC_LAUNCH]
    ids = sorted(struct.unpack_from("<Q", r, 24)[0] for r in launches)
    copies = [parse(REC_LAUNCH, r) for r in launches]
    ips = {c[0] for _n, c in copies if c}
    rets = {struct.unpack_from("<Q", c[3], 0)[0] for _n, c in copies if c}
    ip = next(iter(ips), 0)
    return {
        f"ids 1001..{1000 + n} ({len(ids)} launches)": ids == list(range(1001, 1001 + n)),
        "every launch carries a copy and no user frames":
            all(c and nu == 0 for nu, c in copies),
        f"one ip, the marker's entry ({len(ips)})": len(ips) == 1,
        "sp at the return address (8 past a 16-byte boundary)":
            all(c[1] % 16 == 8 for _n, c in copies if c),
        f"two return addresses near the marker ({len(rets)})":
            len(rets) == 2 and all(abs(r - ip) < 65536 and r != ip for r in rets),
    }


def execs_and_modules(path, program):
    """The pids that exec'd program, and every MODULE as pid -> [(start, end, pgoff, dev,
    ino, path)]."""
    execs, mods = set(), {}
    for rtype, _f, pid, rec in records(path):
        if rtype == REC_PROC_EXEC:
            (path_len,) = struct.unpack_from("<I", rec, 28)
            if rec[48:48 + path_len].decode(errors="replace") == program:
                execs.add(pid)
        elif rtype == REC_MODULE:
            start, end, pgoff, dev, ino, path_len = struct.unpack_from("<QQQQQI", rec, 24)
            name = rec[72:72 + path_len].decode(errors="replace")
            mods.setdefault(pid, []).append((start, end, pgoff, dev, ino, name))
    return execs, mods


def check_modules(path, program, n):
    execs, every = execs_and_modules(path, program)
    mods = {pid: libc for pid, ms in every.items()
            if (libc := [m for m in ms if os.path.basename(m[5]).startswith("libc.so")])}
    libc = [m for pid in execs for m in mods.get(pid, [])]
    page = os.sysconf("SC_PAGE_SIZE")

    def same_file(m):
        st = os.stat(m[5])
        return (m[3], m[4]) == (st.st_dev, st.st_ino)

    return {
        f"{len(execs)} processes exec'd {program}, {n} or more": len(execs) >= n,
        f"each has a MODULE of its libc ({sum(1 for p in execs if p in mods)})":
            all(p in mods for p in execs),
        "page-aligned ranges, the offset too":
            all(m[0] < m[1] and m[0] % page == m[1] % page == m[2] % page == 0 for m in libc),
        "device and inode as stat gives them": bool(libc) and all(same_file(m) for m in libc),
    }


def check_no_modules(path, program, n):
    execs, mods = execs_and_modules(path, program)
    count = sum(len(ms) for ms in mods.values())
    return {
        f"{len(execs)} processes exec'd {program}, {n} or more": len(execs) >= n,
        f"no MODULE record ({count})": count == 0,
    }


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "samples":
        checks = check_samples(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5],
                               int(sys.argv[6]))
    elif len(sys.argv) == 4 and sys.argv[1] == "launches":
        checks = check_launches(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "modules":
        checks = check_modules(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 5 and sys.argv[1] == "no-modules":
        checks = check_no_modules(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
    for k, v in checks.items():
        print("ok" if v else "FAIL", k)
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
