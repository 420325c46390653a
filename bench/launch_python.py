# SPDX-License-Identifier: MIT
# What the Python frames add to an in-process launch stack (cupti/launch_stack.c,
# python/self.c; docs/cupti.md "Python launch stacks"), per launch, from Python callers D
# frames deep, under each interpreter found (/usr/bin/python3, pyenv's 3.12 and 3.13).
#
# liblaunch_inproc.so (tests/python/launch_inproc.c, loaded with ctypes) times, from under
# the Python frames, N calls each of: launch_stack__record as the CUPTI library calls it
# (native walk, record, Python block; a put that keeps nothing), py_self__stack alone (the
# Python block), launch_stack__capture alone (the native walk, no record, no Python block).
# Warm: the thread's rule cache holds every frame, as in a launch loop. Each row is the median
# of REPEAT runs.
#
# Usage: launch_python.py LIB [-n CALLS] [-r REPEAT]     (defaults 100000, 5)
import argparse
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import traceback


def at_depth(lib, depth, n):
    if depth > 0:
        return at_depth(lib, depth - 1, n)
    out = (ctypes.c_double * 3)()
    lib.inproc_bench(n, out)
    return len(traceback.extract_stack()), list(out)


def one(lib_path, n, repeat):
    lib = ctypes.CDLL(lib_path)
    lib.inproc_bench.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_double)]
    base = len(traceback.extract_stack()) + 1  # at_depth(0)'s own frame
    for want in (5, 20, 40, 80):
        runs = [at_depth(lib, want - base - 1, n) for _ in range(repeat)]
        frames = runs[0][0]
        rec, py, native = (statistics.median(r[1][i] for r in runs) for i in range(3))
        print(f"{sys.version.split()[0]:8} {frames:4} Python frames: record {rec:6.0f} ns, "
              f"Python block alone {py:5.0f} ns ({py / frames:4.1f} ns/frame), native walk "
              f"alone {native:5.0f} ns")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("-n", type=int, default=100000)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--one", action="store_true")
    a = ap.parse_args()
    if a.one:
        one(a.lib, a.n, a.r)
        return 0
    pys = ["/usr/bin/python3"]
    for minor in ("3.12", "3.13"):
        pys += sorted(glob.glob(f"/root/.pyenv/versions/{minor}.*/bin/python3"))[-1:]
    rc = 0
    for py in pys:
        if os.access(py, os.X_OK):
            rc |= subprocess.run([py, os.path.abspath(__file__), a.lib, "-n", str(a.n),
                                  "-r", str(a.r), "--one"]).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
