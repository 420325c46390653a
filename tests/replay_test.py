#!/usr/bin/python3
"""The replay source with real processes: writes replay files by hand from the layouts of
include/xpusup/event.h (an independent writer), replays them through a session with one
correlator shard and checks the joins, the pace, and that a corrupt record stops the replay
after everything before it was sent. TAP on stdout.

Usage: replay_test.py XPUSUP_BINARY"""
import json, os, struct, subprocess, sys, tempfile, time

XPUSUP = sys.argv[1]
n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {what}", flush=True)
    failed += 0 if cond else 1


def rec(type_, payload, ts, pid, tid, flags=0):
    size = 24 + len(payload)
    assert size % 8 == 0
    return struct.pack("<HHIQII", type_, flags, size, ts, pid, tid) + payload


def cuda_api(ts, pid, corr):
    return rec(4, struct.pack("<QQIHHII", ts + 4000, corr, 211, 1, 0, 0, 0), ts, pid, pid)


def launch(ts, pid, corr, frames):
    return rec(3, struct.pack("<QIHH", corr, 211, len(frames), 0) +
               b"".join(struct.pack("<Q", f) for f in frames), ts, pid, pid)


def kernel(ts, pid, corr):
    payload = struct.pack("<QQQQQIIIIiiiiiiIIHHI", ts, ts + 1000, corr, 0, 0, 0, 1, 7, 0,
                          64, 1, 1, 128, 1, 1, 0, 0, 32, 0, 0)
    return rec(5, payload, ts, pid, 0)


HEADER = struct.pack("<QII", 0x314C504552555058, 2, 0)


def status(session):
    out = subprocess.run([XPUSUP, "status", "--session", session, "--json"],
                         capture_output=True, text=True).stdout
    try:
        j = json.loads(out)
    except ValueError:
        return {}
    return {a["name"]: a for a in j.get("actors", [])}


def counter(actors, name, key):
    return actors.get(name, {}).get("counters", {}).get(key, -1)


print("TAP version 13", flush=True)
work = tempfile.mkdtemp(prefix="xpusup-replaytest-")
pid_a, pid_b = 4242, 4343
records = []
t0 = 1_000_000_000
for i in range(1, 1001):          # joinable: API + LAUNCH + kernel
    pid = pid_a if i % 2 else pid_b
    records += [cuda_api(t0 + i * 1000, pid, i), launch(t0 + i * 1000 + 10, pid, i, [0x400000 + i]),
                kernel(t0 + i * 1000 + 500, pid, i)]
for i in range(5001, 5051):       # kernels whose launch is not in the file
    records.append(kernel(t0 + 2_000_000, pid_a, i))
good = len(records)
with open(os.path.join(work, "good.xpr"), "wb") as f:
    f.write(HEADER + b"".join(records))
with open(os.path.join(work, "corrupt.xpr"), "wb") as f:
    bad = bytearray(kernel(t0, pid_a, 9999))
    struct.pack_into("<I", bad, 4, 13)            # a size that is not a multiple of 8
    f.write(HEADER + b"".join(records[:300]) + bytes(bad) + b"".join(records[300:]))
with open(os.path.join(work, "paced.xpr"), "wb") as f:
    f.write(HEADER + b"".join(cuda_api(t0 + k * 100_000_000, pid_a, k + 1) for k in range(11)))

conf = os.path.join(work, "replay.conf")


def session(name, path, speed="full", ttl=300):
    with open(conf, "w") as f:
        f.write(f"[sink out]\nkind = test\n[correlator]\nshards = 1\nttl_ms = {ttl}\n"
                f"[source rp]\nkind = replay\npath = {path}\nspeed = {speed}\n")
    r = subprocess.run([XPUSUP, "start", conf, "--session", name], capture_output=True, text=True)
    return r.returncode


def wait(name, cond, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        a = status(name)
        if a and cond(a):
            return a
        time.sleep(0.1)
    return status(name)


def stop(name):
    subprocess.run([XPUSUP, "stop", "--session", name], capture_output=True)


s = f"replay-{os.getpid()}-good"
ok(session(s, "good.xpr") == 0, "a session replaying a file (path relative to the config) starts")
a = wait(s, lambda a: counter(a, "rp", "done") == 1 and counter(a, "correlator.0", "in") == good
         and counter(a, "correlator.0", "unmatched") == 50)
ok(counter(a, "rp", "records_out") == good and counter(a, "rp", "corrupt") == 0,
   f"every record of the file replayed ({counter(a, 'rp', 'records_out')} of {good})")
ok(counter(a, "correlator.0", "matched") == 1000,
   f"the 1000 kernels with their launch in the file joined ({counter(a, 'correlator.0', 'matched')})")
ok(counter(a, "correlator.0", "unmatched") == 50,
   f"the 50 without went out unmatched at their TTL ({counter(a, 'correlator.0', 'unmatched')})")
stop(s)

s = f"replay-{os.getpid()}-bad"
session(s, os.path.join(work, "corrupt.xpr"))
a = wait(s, lambda a: counter(a, "rp", "done") == 1)
ok(counter(a, "rp", "corrupt") == 1 and counter(a, "rp", "records_out") == 300,
   f"a corrupt record is counted and replay stops after the 300 records before it "
   f"({counter(a, 'rp', 'records_out')}, corrupt {counter(a, 'rp', 'corrupt')})")
ok(a.get("rp", {}).get("state") == "running" and a["rp"]["restarts"] == 0,
   "the replay source does not crash or restart on it")
stop(s)

s = f"replay-{os.getpid()}-paced"
t = time.time()
session(s, "paced.xpr", speed="original")
a = wait(s, lambda a: counter(a, "rp", "done") == 1)
took = time.time() - t
ok(counter(a, "rp", "records_out") == 11 and 0.9 <= took <= 5,
   f"speed = original keeps the file's pace: 11 records 100 ms apart took {took:.2f} s (1 s)")
stop(s)

s = f"replay-{os.getpid()}-missing"
with open(conf, "w") as f:
    f.write("[sink out]\nkind = test\n[correlator]\nshards = 1\n"
            "[source rp]\nkind = replay\npath = nonexistent.xpr\n")
r = subprocess.run([XPUSUP, "start", conf, "--session", s], capture_output=True, text=True)
ok(r.returncode == 100 and "unable to open" in r.stderr and "nonexistent.xpr" in r.stderr,
   f"a missing replay file fails the start with exit 100 and the actor's reason "
   f"(exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''})")
stop(s)

s = f"replay-{os.getpid()}-abi"
with open(os.path.join(work, "abi1.xpr"), "wb") as f:   # records of the layouts before ABI 2
    f.write(struct.pack("<QII", 0x314C504552555058, 1, 0) + b"".join(records[:3]))
with open(conf, "w") as f:
    f.write("[sink out]\nkind = test\n[correlator]\nshards = 1\n"
            "[source rp]\nkind = replay\npath = abi1.xpr\n")
r = subprocess.run([XPUSUP, "start", conf, "--session", s], capture_output=True, text=True)
ok(r.returncode == 100 and "event ABI 1, this xpusup reads ABI 2" in r.stderr,
   f"a replay file of another event ABI fails the start and says which "
   f"(exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''})")
stop(s)

print(f"1..{n}")
sys.exit(1 if failed else 0)
