# Child processes of a Python program (tests/python_test.sh): a fork child (as a DataLoader
# worker is) and a spawn child (multiprocessing's spawn: a fresh interpreter, exec'd), each
# running its own hot function for a while.
import multiprocessing as mp
import sys
import time


def busy(seconds):
    end = time.perf_counter() + seconds
    x = 3
    while time.perf_counter() < end:
        x = (x * 7919) % 1000000007
    return x


def child_hot_fork(seconds):
    return busy(seconds)


def child_hot_spawn(seconds):
    return busy(seconds)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    f = mp.get_context("fork").Process(target=child_hot_fork, args=(seconds,))
    s = mp.get_context("spawn").Process(target=child_hot_spawn, args=(seconds,))
    f.start()
    s.start()
    f.join()
    s.join()
    print("children", f.exitcode, s.exitcode)


if __name__ == "__main__":
    main()
