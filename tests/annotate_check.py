#!/usr/bin/python3
"""Checks the test actor's dump of an annotated program (annotate_test.sh).

Usage: annotate_check.py DUMP threads ITER | cpp ITER

Per thread, RANGE events sorted by (ts, id) must nest: every push has its pop, a pop never
comes without an open push, and the names and counts are exactly what the program did.
"""
import collections
import json
import sys

PUSH, POP, MARK = 1, 2, 5


def load(path):
    ranges, counters, losses = collections.defaultdict(list), [], 0
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e["kind"] == "range":
                ranges[e["tid"]].append(e)
            elif e["kind"] == "pmu_counter":
                counters.append(e)
            elif e["kind"] == "loss":
                losses += e.get("value", 0)
    return ranges, counters, losses


def nest(events):
    """(pushes by name, marks, set of (parent, child) name pairs) or raises."""
    stack, pushes, marks, pairs = [], collections.Counter(), 0, set()
    for e in sorted(events, key=lambda e: (e["ts"], e["id"])):
        ph = e.get("phase")
        if ph == PUSH:
            name = e.get("name", "")
            pairs.add((stack[-1] if stack else None, name))
            stack.append(name)
            pushes[name] += 1
        elif ph == POP:
            if not stack:
                raise ValueError("pop without a push at ts %d" % e["ts"])
            stack.pop()
        elif ph == MARK:
            marks += 1
            pairs.add((stack[-1] if stack else None, "mark:" + e.get("name", "")))
        else:
            raise ValueError("unexpected phase %r" % ph)
    if stack:
        raise ValueError("%d ranges never popped: %s" % (len(stack), stack))
    return pushes, marks, pairs


def main():
    path, what, it = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ranges, counters, losses = load(path)
    errors = []
    if losses:
        errors.append("%d records lost" % losses)
    per = {tid: nest(evs) for tid, evs in ranges.items()}
    if what == "threads":
        mains = [t for t, p in per.items() if p[0].get("main")]
        workers = [t for t, p in per.items() if not p[0].get("main")]
        if len(mains) != 1 or per[mains[0]][0] != {"main": 1}:
            errors.append("main thread: %r" % [per[t][0] for t in mains])
        if len(workers) != 4:
            errors.append("%d worker threads, want 4" % len(workers))
        want = {"outer": it, "middle": it, "inner": 3 * it}
        pairs = {(None, "outer"), ("outer", "middle"), ("middle", "inner"),
                 ("outer", "mark:tick")}
        for t in workers:
            p, m, pr = per[t]
            if dict(p) != want or m != it or pr != pairs:
                errors.append("thread %d: pushes %r marks %d nesting %r" % (t, dict(p), m,
                                                                            sorted(pr, key=str)))
        iters = [c for c in counters if c.get("name") == "iter"]
        if len(iters) != 4 * it:
            errors.append("%d iter counters, want %d" % (len(iters), 4 * it))
        elif sorted(c.get("value", 0) for c in iters) != sorted(list(range(it)) * 4):
            errors.append("iter counter values differ")
    else:
        odd, even = it // 2, it - it // 2
        want = {"step": it, "branch": it, "leaf": odd + 2 * even, "thrower": it}
        pairs = {(None, "step"), ("step", "branch"), ("branch", "leaf"), ("step", "thrower")}
        if len(per) != 2:
            errors.append("%d threads with ranges, want 2" % len(per))
        for t, (p, m, pr) in per.items():
            if dict(p) != want or pr != pairs:
                errors.append("thread %d: pushes %r nesting %r" % (t, dict(p),
                                                                   sorted(pr, key=str)))
    total = sum(len(v) for v in ranges.values())
    print("%d range events on %d threads, %d counters" % (total, len(ranges), len(counters)))
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


sys.exit(main())
