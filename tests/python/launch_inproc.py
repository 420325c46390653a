# SPDX-License-Identifier: MIT
# The CUPTI library's in-process launch stacks from Python callers (cupti/launch_stack.c,
# python/self.c), without a GPU: liblaunch_inproc.so (launch_inproc.c) captures a LAUNCH as
# the launch callback does, and names its Python frames with python/'s code reader; this
# script compares them with what Python says of its own stack (traceback.extract_stack).
#
# Usage: launch_inproc.py LIB           TAP over every interpreter found: /usr/bin/python3
#                                       and pyenv's 3.11 to 3.13 (read), and 3.10 (not read)
#        launch_inproc.py LIB --one     the checks under this interpreter, as JSON lines
#        launch_inproc.py LIB --bad W   the checks with a layout made wrong (W: 1 f_code, 2 the
#                                       current frame, 3 previous, each 8 bytes off)
#        launch_inproc.py LIB --session under record (tests/cupti_test.sh): 10 steps of 4
#                                       launches into the session's cupti actor, correlation
#                                       ids 1000.., each from fake_launch <- launch_kernels <-
#                                       train_step <- main <- <module>
import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback

NAME = re.compile(r"^([E-]) (.*) \((.*):(\d+)\)$")


def load(path):
    lib = ctypes.CDLL(path)
    lib.inproc_frames.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.inproc_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    lib.inproc_bench.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_double)]
    return lib


def launch_kernels(lib, first=None):
    if first is not None:
        return lib.fake_launch(first, 4)  # the session's launches
    want = traceback.extract_stack()
    rc = lib.inproc_launch()
    return rc, want, want[-1].lineno + 1


def train_step(lib, first=None):
    return launch_kernels(lib, first)


def recurse(lib, depth):
    if depth:
        return recurse(lib, depth - 1)
    return launch_kernels(lib)


def frames(lib):
    buf = ctypes.create_string_buffer(64 * 1024)
    n = lib.inproc_frames(buf, len(buf))
    lines = buf.value.decode().splitlines()
    return n, [NAME.match(line) for line in lines]


def stats(lib):
    out = (ctypes.c_uint64 * 6)()
    lib.inproc_stats(out)
    return dict(zip(["captured", "failed", "py_stacks", "py_frames", "py_truncated", "py_bad"],
                    list(out)))


def compare(lib, got, where, entries=None):
    """The kept record against Python's own stack: (ok, what)."""
    rc, want, line = got
    if rc != 0:
        return False, f"{where}: inproc_launch returned {rc}"
    if not lib.inproc_has_python():
        return False, f"{where}: the LAUNCH has no Python block"
    n, names = frames(lib)
    want = list(reversed(want))  # innermost first, as the record
    if n != len(want) or None in names:
        return False, f"{where}: {n} frames {names[:3]}, Python says {len(want)}"
    for i, (m, w) in enumerate(zip(names, want)):
        qual, file, ln = m.group(2), m.group(3), int(m.group(4))
        wl = line if i == 0 else w.lineno
        if qual.split(".")[-1] != w.name or file != w.filename or ln != wl:
            return False, f"{where}: frame {i} {m.group(0)!r}, Python says {w.name} {w.filename}:{wl}"
    flags = "".join(m.group(1) for m in names)
    entries = entries or {len(names) - 1}
    want_flags = "".join("E" if i in entries else "-" for i in range(len(names)))
    if flags != want_flags:
        return False, f"{where}: ENTRY flags {flags}, want {want_flags}"
    return True, f"{where}: {n} frames, innermost {names[0].group(2)}:{names[0].group(4)}"


def main(lib, session=False):
    if session:
        options = lib.inproc_session_open()
        print(f"options {options:#x}")
        not_put = 0
        for step in range(10):
            not_put += train_step(lib, 1000 + 4 * step)
        print(f"not put {not_put}")
        time.sleep(1)  # the correlator names the frames from this process's memory
        return []
    results = []
    if sys.version_info < (3, 11):
        rc = lib.inproc_launch()
        results.append((rc == 0 and not lib.inproc_has_python(),
                        f"{sys.version.split()[0]}: a LAUNCH without Python frames (rc {rc})"))
        return results

    got = train_step(lib)
    ok, what = compare(lib, got, "main thread")
    if ok:
        _, names = frames(lib)
        quals = [m.group(2) for m in names]
        ok = quals == ["launch_kernels", "train_step", "main", "<module>"]
        what += f" {quals}"
    results.append((ok, what))

    box = {}

    def thread_main():
        box["got"] = train_step(lib)
        # Thread.run calls its target with *args: through C in 3.11 (thread_main starts an
        # activation of its own), inlined from 3.12 on; _bootstrap is called from C
        n = len(box["got"][1])
        box["res"] = compare(lib, box["got"], "threading.Thread",
                             entries={2, n - 1} if sys.version_info < (3, 12) else {n - 1})

    t = threading.Thread(target=thread_main)
    t.start()
    t.join()
    results.append(box.get("res", (False, "threading.Thread: no result")))

    # A nested activation: sorted() calls the key from C, so the lambda's frame is the first
    # of its own activation of the eval function (ENTRY), <module>'s the first of the outer.
    box.clear()
    sorted([1], key=lambda x: box.setdefault("got", train_step(lib)))
    n_outer = len(traceback.extract_stack())
    results.append(compare(lib, box["got"], "a key function called from C",
                           entries={2, 2 + n_outer}))

    # A forked child: the parent's answer (interpreter, way of reading) holds there; its
    # frames are its own (the child's <module> -> main -> train_step, as the parent's).
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        res = compare(lib, train_step(lib), "a forked child")
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    os.waitpid(pid, 0)
    results.append(tuple(json.loads(text)) if text else (False, "a forked child: no answer"))

    rc = lib.inproc_launch_c_thread()
    results.append((rc == 0 and not lib.inproc_has_python(),
                    f"a thread made in C: rc {rc}, no Python block"))

    before = stats(lib)
    rc, _, _ = recurse(lib, 200)
    n, names = frames(lib)
    after = stats(lib)
    results.append((rc == 0 and n == 128 and all(m and m.group(2) == "recurse" for m in names[2:])
                    and after["py_truncated"] == before["py_truncated"] + 1
                    and after["py_frames"] == before["py_frames"] + 128,
                    f"201 frames deep: {n} kept, truncated {before['py_truncated']} -> "
                    f"{after['py_truncated']}"))

    st = stats(lib)
    results.append((st["failed"] == 0 and st["py_bad"] == 0 and st["py_stacks"] == 4
                    and st["captured"] == 5, f"counters {st}"))

    if os.environ.get("LAUNCH_INPROC_BENCH"):
        bench(lib, int(os.environ["LAUNCH_INPROC_BENCH"]))
    return results


def bad_layout(lib, what):
    """A wrong layout: frames off (or cut short), never a fault; two launches."""
    rc = lib.inproc_bad_layout(what)
    if rc:
        return [(False, f"bad layout {what}: inproc_bad_layout returned {rc}")]
    got = []
    for _ in range(2):
        r = train_step(lib)[0]
        n = lib.inproc_frames(ctypes.create_string_buffer(64 * 1024), 64 * 1024)
        got.append((r, lib.inproc_has_python(), n))
    st = stats(lib)
    ok = all(r == 0 for r, _, _ in got)
    if what in (1, 2):
        ok &= not any(has for _, has, _ in got) and st["py_stacks"] == 0
    else:
        ok &= all(n <= 1 for _, _, n in got) and st["py_bad"] == st["py_stacks"]
    return [(ok, f"bad layout {what}: (rc, block, frames) {got}, counters {st}")]


def bench_at(lib, depth, n):
    if depth:
        return bench_at(lib, depth - 1, n)
    out = (ctypes.c_double * 3)()
    lib.inproc_bench(n, out)
    return len(traceback.extract_stack()), list(out)


def bench(lib, n):
    for depth in (0, 20, 40):
        frames_deep, (rec, py, native) = bench_at(lib, depth, n)
        print(f"# bench {sys.version.split()[0]}, {frames_deep} Python frames: "
              f"record {rec:.0f} ns, python block alone {py:.0f} ns, native walk alone "
              f"{native:.0f} ns", file=sys.stderr)


def interpreters():
    found = ["/usr/bin/python3"]
    for minor in ("3.10", "3.11", "3.12", "3.13"):
        found += sorted(glob.glob(f"/root/.pyenv/versions/{minor}.*/bin/python3"))[-1:]
    return [p for p in found if os.access(p, os.X_OK)]


def child_env(lib_path):
    """A sanitizer build's library needs its runtimes loaded first, and Python is not
    sanitized: preload them (ASan first) into the interpreters, whose own leaks at exit are
    not this test's."""
    ldd = subprocess.run(["ldd", lib_path], capture_output=True, text=True).stdout
    runtimes = sorted((m.group(2) for m in re.finditer(r"lib(asan|ubsan)\.so\S* => (\S+)", ldd)),
                      key=lambda p: "libasan" not in p)
    env = dict(os.environ)
    if runtimes:
        env["LD_PRELOAD"] = " ".join(runtimes)
        env["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=0"
    return env


def driver(lib_path):
    n = 0
    failed = False
    env = child_env(lib_path)
    runs = [(py, "--one") for py in interpreters()]
    runs += [(py, "--bad", w) for py in interpreters() if "3.10" not in py for w in "123"]
    for py, *mode in runs:
        run = subprocess.run([py, os.path.abspath(__file__), lib_path, *mode],
                             capture_output=True, text=True, timeout=120, env=env)
        lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]
        if run.returncode or not lines:
            n += 1
            failed = True
            print(f"not ok {n} - {py}: exit {run.returncode}: {run.stderr[-600:]!r}")
            continue
        for ok, what in lines:
            n += 1
            failed |= not ok
            print(f"{'ok' if ok else 'not ok'} {n} - {py}: {what}")
        if "3.10" in py:
            said = "no Python launch stacks" in run.stderr
            n += 1
            failed |= not said
            print(f"{'ok' if said else 'not ok'} {n} - {py}: says why on stderr: "
                  f"{run.stderr.strip()[:200]!r}")
        if mode == ["--bad", "1"]:
            said = run.stderr.count("do not read as its layout says") == 1
            n += 1
            failed |= not said
            print(f"{'ok' if said else 'not ok'} {n} - {py}: bad layout 1 said once: "
                  f"{run.stderr.strip()[:200]!r}")
        for line in run.stderr.splitlines():
            if line.startswith("# bench"):
                print(line)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "--session":
        main(load(sys.argv[1]), session=True)
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[2] == "--bad":
        for ok, what in bad_layout(load(sys.argv[1]), int(sys.argv[3])):
            print(json.dumps([ok, what]))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[2] == "--one":
        for ok, what in main(load(sys.argv[1])):
            print(json.dumps([ok, what]))
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit("usage: launch_inproc.py LIB [--one]")
    sys.exit(driver(sys.argv[1]))
