"""The Python workload of bench/python_cost.sh: a hot leaf under DEPTH Python frames.

Usage: python_work.py DEPTH --seconds S   spin for S seconds (the per-sample cost runs)
       python_work.py DEPTH --work N      N fixed units of work; prints the seconds they took
                                          (the slowdown runs: the program's own time, without
                                          the session's start and stop)
"""
import sys
import time


def leaf(n):
    x = 3
    for _ in range(n):
        x = (x * 7919) % 1000003
    return x


def deep(d, n):
    return deep(d - 1, n) if d > 1 else leaf(n)


def main():
    depth = int(sys.argv[1])
    if sys.argv[2] == "--seconds":
        end = time.perf_counter() + float(sys.argv[3])
        while time.perf_counter() < end:
            deep(depth, 2000)
        return
    t0 = time.perf_counter()
    for _ in range(int(sys.argv[3])):
        deep(depth, 2000)
    print("%.4f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
