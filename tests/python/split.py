# A pure-Python workload with a known split (tests/python_test.sh): main -> train_step,
# which does 2 units of work in hot_a and 1 unit in hot_b, each unit the same loop of
# long-integer arithmetic (the interpreter's own native code: long_mul, the allocator).
# A second thread runs its own Python function, worker_hot, the whole time.
#
#   split.py SECONDS [--launch LIB]   with --launch, train_step also calls the stand-in
#                                     launcher LIB (ctypes) through launch_kernels
import ctypes
import sys
import threading
import time

UNIT = 12000  # loop turns in one unit of work (about 1 ms on 3.11)
stop = False


# The hot functions do their work themselves (no helper below them): each is the innermost
# Python frame of its samples, with only the interpreter's native code under it. The split is
# one of work, not of wall time: the same loop, twice as many turns in hot_a, so that CPU
# samples (cpu-clock counts a thread while it runs) find it whatever else the machine runs.
def hot_a():
    x = 3
    for _ in range(2 * UNIT):
        x = (x * 7919) % 1000000007 * 12345678901234567890 // 12345678901234567890
    return x


def hot_b():
    x = 3
    for _ in range(UNIT):
        x = (x * 7919) % 1000000007 * 12345678901234567890 // 12345678901234567890
    return x


def launch_kernels(lib, first):
    lib.fake_launch(first, 4)


def train_step(lib, step):
    hot_a()
    hot_b()
    if lib is not None:
        launch_kernels(lib, 1000 + 4 * step)


def worker_hot():
    x = 3
    while not stop:
        x = (x * 7919) % 1000000007 * 12345678901234567890 // 12345678901234567890


def main():
    global stop
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    lib = None
    if len(sys.argv) > 3 and sys.argv[2] == "--launch":
        lib = ctypes.CDLL(sys.argv[3])
    worker = threading.Thread(target=worker_hot, name="worker")
    worker.start()
    end = time.perf_counter() + seconds
    step = 0
    while time.perf_counter() < end:
        train_step(lib, step)
        step += 1
    stop = True
    worker.join()
    print("steps", step)


if __name__ == "__main__":
    main()
