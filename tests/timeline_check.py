#!/usr/bin/python3
"""Check a trace.json written by the timeline sink (docs/timeline.md) against the rules of the
Chrome Trace Event format and the invariants xpusup promises (docs/check.md), independently of the
C code that wrote it.

Usage: timeline_check.py TRACE [--nesting] [--sm exact|bound] [--frames-exact] [--expect KEY=N ...]

Prints one line per problem (at most 30) and, last, a JSON summary of what the file holds;
exits 1 when there is any problem.

  --nesting     every slice on a CPU thread nests properly (X and B/E together): true of real
                programs, and of the synthetic source when it is paced
  --sm exact    the SM-active counters equal what the kernels in the file give (docs/timeline.md:
                merged intervals, fixed windows, 100 % cap); bound: at least that (the
                windows may fill short gaps when a window holds very many kernels)
  --frames-exact  stackFrames holds no frame that no event names (with its callers): true of
                a file or a window; a ring's snapshot holds every frame the sink knows
  --expect K=N  the summary's K is N (kernel, memcpy, memset, flows, ...)
"""
import collections
import decimal
import json
import re
import sys

PHASES = set("XBEisfCMbe")
problems = []


def bad(msg):
    problems.append(msg)


def ns(v):
    """A timestamp in us with up to three decimals, as integer ns."""
    d = decimal.Decimal(v) * 1000
    if d != d.to_integral_value():
        bad(f"timestamp {v} is finer than a nanosecond")
    return int(d)


def no_constant(name):
    raise ValueError(f"{name} is not JSON")


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    path, nesting, sm_mode, expect, frames_exact = args[0], False, None, {}, False
    i = 1
    while i < len(args):
        if args[i] == "--nesting":
            nesting = True
        elif args[i] == "--frames-exact":
            frames_exact = True
        elif args[i] == "--sm":
            i += 1
            sm_mode = args[i]
        elif args[i] == "--expect":
            i += 1
            k, v = args[i].split("=")
            expect[k] = int(v)
        else:
            sys.exit(f"unknown argument {args[i]}")
        i += 1

    # strict: UTF-8 only, no NaN or Infinity, exact decimals
    with open(path, encoding="utf-8") as f:
        doc = json.load(f, parse_float=decimal.Decimal, parse_constant=no_constant)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        sys.exit("not a trace: no traceEvents array")
    if doc.get("displayTimeUnit") != "ns":
        bad("displayTimeUnit is not ns")
    other = doc.get("otherData", {})
    for k in ("clock", "xpusup_version", "events"):
        if k not in other:
            bad(f"otherData has no {k}")
    if other.get("clock") != "CLOCK_MONOTONIC":
        bad(f"otherData.clock is {other.get('clock')!r}")
    events = doc["traceEvents"]
    if other.get("events") != len(events):
        bad(f"otherData.events {other.get('events')} but {len(events)} events")

    proc_names, thread_names = {}, {}
    slices = collections.defaultdict(list)  # (pid, tid) -> [(start, end, name, cat, args)]
    be = collections.defaultdict(list)  # (pid, tid) -> B/E events in ts order
    flows_s, flows_f = {}, {}
    binds_out, binds_in = {}, collections.defaultdict(list)  # v2 arrows: bind_id -> ts
    counters = collections.defaultdict(list)  # (pid, name) -> [(ts, value)]
    used = set()  # (pid, tid) of every event but metadata
    count = collections.Counter()
    sfs = []  # (event number, sf) of every event naming its stack in stackFrames

    for n, e in enumerate(events):
        where = f"event {n}"
        if not isinstance(e, dict):
            bad(f"{where} is not an object")
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            bad(f"{where}: ph {ph!r}")
            continue
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int) or e[k] < 0:
                bad(f"{where} ({ph}): {k} {e.get(k)!r}")
        if not isinstance(e.get("name"), str):
            bad(f"{where} ({ph}): no name")
        pid, tid, name = e.get("pid"), e.get("tid"), e.get("name")
        if ph == "M":
            if name == "process_name":
                proc_names[pid] = e["args"]["name"]
            elif name == "thread_name":
                thread_names[(pid, tid)] = e["args"]["name"]
            continue
        if not isinstance(e.get("ts"), (int, decimal.Decimal)) or e["ts"] < 0:
            bad(f"{where} ({ph}): ts {e.get('ts')!r}")
            continue
        ts = ns(e["ts"])
        used.add((pid, tid))
        if "sf" in e:
            sfs.append((n, e["sf"]))
            if not isinstance(e["sf"], (int, str)) or isinstance(e["sf"], bool):
                bad(f"{where} ({ph}): sf {e['sf']!r} is not an id")
        a = e.get("args")
        if isinstance(a, dict) and "stack" in a:
            count["stacks_inline"] += 1
            if not isinstance(a["stack"], list) or not a["stack"] or not all(
                    isinstance(f, str) for f in a["stack"]):
                bad(f"{where} ({ph}): args.stack is not a list of frame names")
        cat = e.get("cat", "")
        count[f"{ph}:{cat}"] += 1
        if ph == "X":
            if not isinstance(e.get("dur"), (int, decimal.Decimal)) or e["dur"] < 0:
                bad(f"{where}: X without a dur >= 0 ({e.get('dur')!r})")
                continue
            slices[(pid, tid)].append((ts, ts + ns(e["dur"]), name, cat, e.get("args", {})))
            if e.get("flow_out") is True:
                if e.get("bind_id") in binds_out:
                    bad(f"{where}: a second flow_out with bind_id {e.get('bind_id')}")
                binds_out[e.get("bind_id")] = ts
            if e.get("flow_in") is True:
                binds_in[e.get("bind_id")].append(ts)
        elif ph in "BE":
            be[(pid, tid)].append((ts, ph, name, n))
        elif ph == "i":
            if e.get("s") not in ("t", "p", "g"):
                bad(f"{where}: instant scope {e.get('s')!r}")
        elif ph in "sf":
            table = flows_s if ph == "s" else flows_f
            if e.get("id") in table:
                bad(f"{where}: a second flow {ph} with id {e.get('id')}")
            table[e.get("id")] = (ts, pid, tid, cat, name, e.get("bp"))
        elif ph == "C":
            a = e.get("args")
            if not isinstance(a, dict) or not a or not all(
                isinstance(v, (int, decimal.Decimal)) for v in a.values()
            ):
                bad(f"{where}: counter without numeric args")
                continue
            for k, v in a.items():
                counters[(pid, f"{name} {k}")].append((ts, v))

    # B/E: balanced and properly nested per thread, names matching
    for key, evs in be.items():
        stack = []
        for ts, ph, name, n in sorted(evs, key=lambda x: (x[0], x[3])):
            if ph == "B":
                stack.append((name, ts))
            elif not stack:
                bad(f"{key}: E at {ts} with nothing open")
            elif stack[-1][0] != name:
                bad(f"{key}: E {name!r} at {ts} closes {stack[-1][0]!r}")
                stack.pop()
            else:
                start = stack.pop()[1]
                slices[key].append((start, ts, name, "B/E", {}))
        if stack:
            bad(f"{key}: {len(stack)} B without E")

    gpu_procs = {}  # GPU pseudo-process pid -> (device, real pid)
    device_procs = {}  # device pseudo-process pid -> device
    for pid, pname in proc_names.items():
        m = re.fullmatch(r"GPU (\d+) \(pid (\d+)\)", pname)
        if m:
            gpu_procs[pid] = (int(m.group(1)), int(m.group(2)))
        m = re.fullmatch(r"GPU (\d+)", pname)
        if m:
            device_procs[pid] = int(m.group(1))

    # names: every process and thread with events is named; stream tracks say their stream
    for pid in sorted({p for p, _ in used}):
        if pid not in proc_names:
            bad(f"pid {pid} has events but no process_name")
    for pid, tid in sorted(used):
        if (pid, tid) in thread_names or pid in device_procs:
            continue
        if pid in gpu_procs or slices.get((pid, tid)):
            bad(f"({pid}, {tid}) has events but no thread_name")
    for (pid, tid), tname in thread_names.items():
        if pid in gpu_procs and tname != f"stream {tid}":
            bad(f"GPU track ({pid}, {tid}) is named {tname!r}")

    # GPU tracks: one thing at a time per stream; CPU threads: proper nesting
    for key, sl in slices.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        if key[0] in gpu_procs:
            for a, b in zip(sl, sl[1:]):
                if b[0] < a[1]:
                    bad(f"GPU track {key}: {b[2]!r} at {b[0]} starts before {a[2]!r} ends at {a[1]}")
                    break
            # the track names the stream (the tid) and the device (the process); args that
            # say them too (files before the track alone did) must agree
            for s in sl:
                if s[4].get("stream", key[1]) != key[1] or s[4].get("device", gpu_procs[key[0]][0]) != gpu_procs[key[0]][0]:
                    bad(f"GPU track {key}: {s[2]!r} has stream/device {s[4].get('stream')}/{s[4].get('device')}")
                    break
        elif nesting:
            stack = []
            for s in sl:
                while stack and stack[-1][1] <= s[0]:
                    stack.pop()
                if stack and s[1] > stack[-1][1]:
                    bad(f"thread {key}: {s[2]!r} [{s[0]}, {s[1]}] overlaps {stack[-1][2]!r} [{stack[-1][0]}, {stack[-1][1]}] without nesting")
                    break
                stack.append(s)

    def inside(key, ts):
        return any(s[0] <= ts <= s[1] for s in slices.get(key, ()))

    # flows: both ends, once each, start not after end, each end on a slice
    for fid in set(flows_s) | set(flows_f):
        if fid not in flows_s or fid not in flows_f:
            bad(f"flow {fid} has only its {'s' if fid in flows_s else 'f'} end")
            continue
        s, f = flows_s[fid], flows_f[fid]
        if f[5] != "e":
            bad(f"flow {fid}: f without bp e")
        if s[3:5] != f[3:5]:
            bad(f"flow {fid}: s and f differ in cat or name")
        if s[0] > f[0]:
            bad(f"flow {fid}: starts at {s[0]}, after its end at {f[0]}")
        if not inside((s[1], s[2]), s[0]):
            bad(f"flow {fid}: its start is on no slice of ({s[1]}, {s[2]})")
        if not inside((f[1], f[2]), f[0]):
            bad(f"flow {fid}: its end is on no slice of ({f[1]}, {f[2]})")

    # v2 arrows (bind_id on the slices): every flow_in has its flow_out, not after it; a
    # flow_out may bind several (a graph's kernels) or none (its GPU work in another file)
    for bid, ends in binds_in.items():
        if bid not in binds_out:
            bad(f"flow_in with bind_id {bid} and no flow_out")
        elif binds_out[bid] > min(ends):
            bad(f"bind_id {bid}: starts at {binds_out[bid]}, after an end at {min(ends)}")

    # stacks: every sf names a frame of stackFrames; every frame's parent is one too; following
    # parents ends at a root (no cycle); with --frames-exact, the file holds exactly the
    # frames its events name and their callers (docs/timeline.md)
    frames = doc.get("stackFrames", {})
    if not isinstance(frames, dict):
        bad("stackFrames is not an object")
        frames = {}
    for fid, f in frames.items():
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            bad(f"stackFrames[{fid!r}] has no name")
        elif "parent" in f and str(f["parent"]) not in frames:
            bad(f"stackFrames[{fid!r}]: parent {f['parent']!r} is not a frame")
    good = set()  # frames whose parents lead to a root

    def resolves(fid):
        """Whether frame fid exists and its parents end at a root (no cycle)."""
        path, seen = [], set()
        while fid is not None and fid not in good:
            if fid in seen or fid not in frames or not isinstance(frames[fid], dict):
                return False
            seen.add(fid)
            path.append(fid)
            p = frames[fid].get("parent")
            fid = None if p is None else str(p)
        good.update(path)
        return True

    reached = set()
    for n, sf in sfs:
        if not resolves(str(sf)):
            bad(f"event {n}: sf {sf!r} names no frame of stackFrames, or one whose parents make a cycle")
            continue
        count["stacks_sf"] += 1
        fid = str(sf)
        while fid is not None and fid not in reached:
            reached.add(fid)
            p = frames[fid].get("parent")
            fid = None if p is None else str(p)
    for fid in frames:
        if not resolves(fid):
            bad(f"stackFrames[{fid!r}]: its parents make a cycle or name no frame")
    if frames_exact and set(frames) - reached:
        bad(f"stackFrames holds {len(set(frames) - reached)} frames no event names (e.g. {sorted(set(frames) - reached)[:3]})")

    # SM active %: recompute from the kernels in the file (docs/timeline.md)
    if sm_mode:
        win = other.get("sm_active", {}).get("window_ns")
        by_entity = collections.defaultdict(list)
        for key, sl in slices.items():
            if key[0] not in gpu_procs:
                continue
            device, rpid = gpu_procs[key[0]]
            for s in sl:
                if s[3] == "kernel" and s[1] > s[0]:
                    by_entity[("device", device)].append((s[0], s[1]))
                    by_entity[("process", rpid)].append((s[0], s[1]))
        device_pid = {d: p for p, d in device_procs.items()}
        checked = 0
        for (kind, ident), ivs in by_entity.items():
            busy = collections.Counter()
            merged = []
            for s, e in sorted(ivs):
                if merged and s <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], e)
                else:
                    merged.append([s, e])
            for s, e in merged:
                w = s - s % win
                while w < e:
                    busy[w] += min(e, w + win) - max(s, w)
                    w += win
            pid = device_pid.get(ident) if kind == "device" else ident
            series = sorted(counters.get((pid, "SM active %"), []))
            if not series:
                bad(f"{kind} {ident}: no SM active counter")
                continue

            def value_at(t):
                v = None
                for ts, x in series:
                    if ts > t:
                        break
                    v = x
                return v

            first, last = min(busy), max(busy)
            for w in range(first, last + win + 1, win):
                want = decimal.Decimal(min(100000, busy.get(w, 0) * 100000 // win)) / 1000
                got = value_at(w)
                ok = got == want if sm_mode == "exact" or not busy.get(w) else (
                    got is not None and want <= got <= 100)
                if not ok:
                    bad(f"{kind} {ident}: SM active at {w} is {got}, want {want}")
                    break
                checked += 1
            if series[0][0] != first:
                bad(f"{kind} {ident}: SM active starts at {series[0][0]}, first kernel window {first}")
        count["sm_windows_checked"] = checked

    summary = {
        "events": len(events),
        "kernel": count["X:kernel"],
        "memcpy": count["X:memcpy"],
        "memset": count["X:memset"],
        "cuda_api": count["X:cuda_api"],
        "ranges": count["X:range"],
        "cpu_samples": count["i:cpu"],
        "flows": len(flows_s) + sum(len(v) for k, v in binds_in.items() if k in binds_out),
        "gpu_tracks": sum(1 for k in slices if k[0] in gpu_procs),
        "tracks_with_slices": sum(1 for v in slices.values() if v),
        "processes": len(proc_names),
        "sm_windows_checked": count["sm_windows_checked"],
        "stacks": count["stacks_sf"] + count["stacks_inline"],
        "stacks_inline": count["stacks_inline"],
        "stack_frames": len(frames),
    }
    for k, v in expect.items():
        if summary.get(k) != v:
            bad(f"{k}: {summary.get(k)}, want {v}")
    for p in problems[:30]:
        print(p)
    if len(problems) > 30:
        print(f"... and {len(problems) - 30} more problems")
    print(json.dumps(summary))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
