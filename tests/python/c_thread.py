# A thread started by C in a Python process (tests/python_test.sh): the main thread runs
# Python (main_hot) while a thread that fake_launch.so starts with pthread_create, which never
# runs Python, spins in C (c_thread_hot). The C thread must show native frames only.
import ctypes
import sys
import threading


def main_hot(stop):
    x = 3
    while not stop.is_set():
        x = (x * 7919) % 1000000007


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.c_thread_spin.argtypes = [ctypes.c_double]
    stop = threading.Event()
    # ctypes releases the GIL around the call, so main_hot runs meanwhile
    waiter = threading.Thread(target=lambda: (lib.c_thread_spin(2.0), stop.set()))
    waiter.start()
    main_hot(stop)
    waiter.join()


if __name__ == "__main__":
    main()
