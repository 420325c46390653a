# Bad input for the Python frame reader (tests/python_test.sh): a program that makes and
# drops code objects all the time (compile, exec), swaps functions' code objects under their
# running callers, and rewrites its frames' locals; the profiler must neither crash nor name a
# frame after a code object it did not read.
import sys
import time


def one():
    return sum(range(200))


def two():
    return sum(range(300))


def swap_loop(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        src = "def f%d(x):\n    return sum(range(x))\nr = f%d(500)\n" % (n, n)
        exec(compile(src, "<churn %d>" % n, "exec"), {})
        one.__code__, two.__code__ = two.__code__, one.__code__
        one()
        two()
        sys._getframe().f_locals["n"] = n  # a frame's locals rewritten
        n += 1
    print("churned", n)


if __name__ == "__main__":
    swap_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
