#!/usr/bin/python3
"""Check what `xpusup record` wrote for a CUDA program against what the program says it does.

Usage: check_trace.py --expect EXPECT.json [options] DIR

EXPECT.json is `cuda_workload --expect` (tests/cuda/workload.cu); DIR is a `record -o` folder
with trace.json (docs/timeline.md) and stats.json (docs/stats.md). Checked:

  kernels      X slices of cat "kernel" per name (CUPTI's mangled name, its demangled form,
               or the qualified name without template arguments and parameters), none of
               another name; graph kernels carry a `graph` arg, others none
  api calls    cuda_api slices (by CUPTI callback id, else by name; a driver call inside a
               runtime call counts once): kernel launches (cudaLaunchKernel, CUDA 13's
               __cudaLaunchKernel, cuLaunchKernel, ...) == kernel_launch_calls (direct ones
               and those made while capturing), graph launches == graph.launches;
               cudaMemcpy*, cudaMemset*, cudaDeviceSynchronize when the trace has any
  copies       memcpy slices per copy_kind: count, bytes, and how many of each size; memset
  ranges       X slices of cat "range" per name, none unfinished, none on an overlap lane,
               each inside the range the expectations name as its parent (on its thread)
  stacks       every kernel's args.stack holds its launcher (the host function that launched
               it; for a graph kernel the one that made its node while the stream was
               captured, docs/cupti.md): at least --min-stack-pct percent of each kernel name
               (default 100)
  arrows       every kernel has a flow arrow from a kernel launch call (a graph kernel: from
               a graph launch call)
  stats.json   kernels.by_name counts, memcpy.by_kind count and bytes, memset (--no-stats:
               not read)

  --strict-transfers   copies and memsets too need a stack holding their launcher and an
                       arrow from cudaMemcpy* / cudaMemset*
  --json FILE          also write the findings (checks, mismatches, counts) as JSON

Prints `ok` lines, a `MISMATCH:` line for each difference, and `note:` lines for what is
reported but not required. Exit status: 0 all match, 1 mismatches, 100 usage, 111 an input
that cannot be read.
"""
import argparse
import collections
import decimal
import json
import os
import re
import sys

LANE_SHIFT = 22  # docs/timeline.md, overlap lanes: tid + (lane << 22)

# CUPTI callback ids (cupti_runtime_cbid.h, cupti_driver_cbid.h) of the launch calls: the
# timeline names only some of them (others are `cuda runtime N`), so they go by id first.
KERNEL_LAUNCH_IDS = {("runtime", i) for i in (211, 214, 269, 270, 430, 431, 505, 506)} | \
    {("driver", i) for i in (307, 442, 477, 478, 652, 653)}
GRAPH_LAUNCH_IDS = {("runtime", 311), ("runtime", 312), ("driver", 514), ("driver", 515)}
KERNEL_LAUNCH_NAMES = ("cudaLaunchKernel", "__cudaLaunchKernel", "cudaLaunchCooperativeKernel",
                       "cuLaunchKernel", "cuLaunchCooperativeKernel")
GRAPH_LAUNCH_NAMES = ("cudaGraphLaunch", "cuGraphLaunch")


def api_kind(e):
    """What a cuda_api slice is: "kernel launch", "graph launch", or its name."""
    a = e.get("args") if isinstance(e.get("args"), dict) else {}
    key = (a.get("domain"), a.get("api_id"))
    if key in KERNEL_LAUNCH_IDS or e["name"].startswith(KERNEL_LAUNCH_NAMES):
        return "kernel launch"
    if key in GRAPH_LAUNCH_IDS or e["name"].startswith(GRAPH_LAUNCH_NAMES):
        return "graph launch"
    return e["name"]


def outermost(slices):
    """The slices not inside another of them on the same thread: a runtime call and the
    driver call it makes are one call."""
    threads = collections.defaultdict(list)
    for e in slices:
        start = ns(e["ts"])
        threads[(e["pid"], int(e["tid"]) & ((1 << LANE_SHIFT) - 1))].append(
            (start, -(start + ns(e.get("dur", 0))), id(e), e))
    out = []
    for evs in threads.values():
        evs.sort(key=lambda x: x[:3])
        end = None
        for start, neg_end, _, e in evs:
            if end is not None and -neg_end <= end:
                continue
            out.append(e)
            end = -neg_end
    return out


class Report:
    def __init__(self):
        self.oks, self.mismatches, self.notes = [], [], []

    def ok(self, msg):
        self.oks.append(msg)
        print(f"ok: {msg}")

    def bad(self, msg):
        self.mismatches.append(msg)
        print(f"MISMATCH: {msg}")

    def note(self, msg):
        self.notes.append(msg)
        print(f"note: {msg}")

    def same(self, what, got, want):
        if got == want:
            self.ok(f"{what}: {got}")
        else:
            self.bad(f"{what}: {got}, expected {want}")


def die(msg, code=111):
    print(f"check_trace: unable to {msg}", file=sys.stderr)
    sys.exit(code)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_float=decimal.Decimal)
    except (OSError, ValueError) as e:
        die(f"read {path}: {e}")


def ns(v):
    """Microseconds with three decimals (docs/timeline.md) as integer nanoseconds."""
    return int(decimal.Decimal(v) * 1000)


def squeeze(name):
    """A demangled name without blanks: CUPTI and c++filt space templates differently."""
    return re.sub(r"\s+", "", name)


def qualified(name):
    """`void ns::k<float, 4>(float*, int)` -> `ns::k`: the name without return type,
    template arguments and parameters."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    return words[-1] if words else name


class Kernels:
    """Maps a kernel name as the trace has it to the expectation's entry."""

    def __init__(self, entries):
        self.by_name = {}
        quals = collections.Counter(qualified(e["name"]) for e in entries)
        for e in entries:
            self.by_name[e["mangled"]] = e
            self.by_name[squeeze(e["demangled"])] = e
            q = qualified(e["name"])
            if quals[q] == 1:  # an ambiguous short name identifies nothing
                self.by_name.setdefault(q, e)

    def find(self, name):
        return (self.by_name.get(name) or self.by_name.get(squeeze(name))
                or self.by_name.get(qualified(name)))


def has_frame(stack, launcher):
    for f in stack or ():
        if not isinstance(f, str):
            continue
        if f == launcher or f.startswith(launcher + "("):
            return True
    return False


def short_stack(stack):
    s = list(stack or [])
    return ";".join(str(f) for f in s[:8]) + (";..." if len(s) > 8 else "") if s else "(none)"


def resolve_stacks(doc):
    """Each event's stack named through stackFrames ("sf": its innermost frame, each frame's
    "parent" its caller; docs/timeline.md) into args.stack, innermost first, as a stack the
    tree had no room for is written inline."""
    frames = doc.get("stackFrames") or {}
    for e in doc["traceEvents"]:
        if "sf" not in e:
            continue
        stack, fid, seen = [], str(e["sf"]), set()
        while fid in frames and fid not in seen:
            seen.add(fid)
            stack.append(frames[fid].get("name"))
            parent = frames[fid].get("parent")
            fid = None if parent is None else str(parent)
        e.setdefault("args", {})["stack"] = stack


class Trace:
    def __init__(self, doc):
        resolve_stacks(doc)
        self.events = doc["traceEvents"]
        self.slices = collections.defaultdict(list)  # cat -> X events
        self.flow_end = {}  # (pid, tid, ts) of the slice an "f" lands on -> id
        self.flow_start = {}  # id -> "s" event
        self.api_at = {}  # (pid, tid, ts) -> cuda_api slice starting there
        self.bound = {}  # bind_id -> the slice with flow_out (v2 arrows)
        for e in self.events:
            ph = e.get("ph")
            if ph == "X":
                self.slices[e.get("cat")].append(e)
                if e.get("cat") == "cuda_api":
                    self.api_at[(e["pid"], e["tid"], ns(e["ts"]))] = e
                if e.get("flow_out") and "bind_id" in e:
                    self.bound[e["bind_id"]] = e
            elif ph == "f":
                self.flow_end[(e["pid"], e["tid"], ns(e["ts"]))] = e.get("id")
            elif ph == "s":
                self.flow_start[e.get("id")] = e

    def arrow_from(self, e):
        """The cuda_api slice an arrow into slice e starts on, or None: the slice whose
        flow_out has e's bind_id (v2), or the slice under the s of the f that lands on e (v1)."""
        if e.get("flow_in") and "bind_id" in e:
            s = self.bound.get(e["bind_id"])
            return s if s is not None and s.get("cat") == "cuda_api" else None
        fid = self.flow_end.get((e["pid"], e["tid"], ns(e["ts"])))
        s = self.flow_start.get(fid) if fid is not None else None
        if s is None:
            return None
        return self.api_at.get((s["pid"], s["tid"], ns(s["ts"])))


def args_of(e):
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def check_kernels(r, t, exp, kernels, min_pct):
    got = collections.Counter()
    unexpected = collections.Counter()
    per_entry = collections.defaultdict(list)
    for e in t.slices["kernel"]:
        entry = kernels.find(e["name"])
        if entry is None:
            unexpected[e["name"]] += 1
            continue
        got[entry["name"]] += 1
        per_entry[entry["name"]].append(e)
    for entry in exp["kernels"]:
        r.same(f"kernel {entry['name']} runs", got[entry["name"]], entry["count"])
    for name, n in sorted(unexpected.items()):
        r.bad(f"kernel {name!r} ran {n} times: not in the expectations")
    r.same("kernels in all", len(t.slices["kernel"]), exp["kernel_count"])

    g = exp["graph"]
    graph_entries = [k for k in exp["kernels"] if k["graph"]]
    r.same("graph kernels (graph launches x kernels per launch)",
           sum(got[k["name"]] for k in graph_entries), g["launches"] * g["kernels_per_launch"])
    for entry in exp["kernels"]:
        runs = per_entry[entry["name"]]
        tagged = sum(1 for e in runs if "graph" in args_of(e))
        if entry["graph"] and tagged != len(runs):
            r.bad(f"graph kernel {entry['name']}: {len(runs) - tagged} of {len(runs)} runs "
                  f"without a graph arg")
        elif not entry["graph"] and tagged:
            r.bad(f"kernel {entry['name']}: {tagged} runs carry a graph arg, "
                  f"but it is not launched by a graph")
    nodes = {(args_of(e).get("graph"), args_of(e).get("graph_node"))
             for k in graph_entries for e in per_entry[k["name"]] if "graph" in args_of(e)}
    if nodes:
        r.note(f"graph kernels ran as {len(nodes)} distinct (graph, graph_node) pairs "
               f"(the graph has {g['kernels_per_launch']} nodes)")

    for entry in exp["kernels"]:
        runs = per_entry[entry["name"]]
        if not runs:
            continue
        launcher = entry["launcher"]
        with_stack = [e for e in runs if args_of(e).get("stack")]
        with_frame = {id(e) for e in runs if has_frame(args_of(e).get("stack"), launcher)}
        pct = 100.0 * len(with_frame) / len(runs)
        msg = (f"kernel {entry['name']}: {len(with_frame)} of {len(runs)} launch stacks hold "
               f"{launcher} ({len(with_stack)} with a stack)")
        if pct + 1e-9 >= min_pct:
            r.ok(msg)
        else:
            miss = next(e for e in runs if id(e) not in with_frame)
            r.bad(f"{msg}; one without: {short_stack(args_of(miss).get('stack'))}")

        if entry["graph"]:
            via = sum(1 for e in runs if has_frame(args_of(e).get("stack"), g["launcher"]))
            r.note(f"graph kernel {entry['name']}: {via} of {len(runs)} stacks hold the graph "
                   f"launch's {g['launcher']} (the stack when its node's is not known)")
        want = "graph launch" if entry["graph"] else "kernel launch"
        arrows = collections.Counter()
        for e in runs:
            api = t.arrow_from(e)
            arrows["none" if api is None else
                   "ok" if api_kind(api) == want else api["name"]] += 1
        if arrows["ok"] == len(runs):
            r.ok(f"kernel {entry['name']}: {len(runs)} arrows from {want} calls")
        else:
            others = ", ".join(f"{n} from {k}" for k, n in sorted(arrows.items()) if k != "ok")
            r.bad(f"kernel {entry['name']}: {arrows['ok']} of {len(runs)} arrows from {want} "
                  f"calls; {others}")


def check_api(r, t, exp):
    calls = t.slices["cuda_api"]
    for kind, want in (("kernel launch", exp["kernel_launch_calls"]),
                       ("graph launch", exp["graph"]["launches"])):
        mine = [e for e in calls if api_kind(e) == kind]
        names = collections.Counter(e["name"] for e in mine)
        r.same(f"{kind} calls ({', '.join(sorted(names)) or 'none'})", len(outermost(mine)),
               want)
    copies = sum(exp["memcpy"][k]["count"] for k in exp["memcpy"])
    optional = [("cudaMemcpy", copies), ("cudaMemset", exp["memset"]["count"]),
                ("cudaDeviceSynchronize", exp["device_synchronize_calls"])]
    for prefix, want in optional:
        n = len(outermost([e for e in calls if e["name"].startswith(prefix)]))
        if n == 0:
            r.note(f"no {prefix} calls in the trace (expected {want} if they are recorded)")
        else:
            r.same(f"{prefix} calls", n, want)


def sizes_of(events):
    c = collections.Counter(str(int(args_of(e).get("bytes", -1))) for e in events)
    return dict(sorted(c.items(), key=lambda kv: int(kv[0])))


def check_transfers(r, t, exp, strict):
    by_kind = collections.defaultdict(list)
    for e in t.slices["memcpy"]:
        kind = args_of(e).get("copy_kind") or e["name"].replace("memcpy ", "", 1)
        by_kind[kind].append(e)
    for kind, want in exp["memcpy"].items():
        evs = by_kind.pop(kind, [])
        r.same(f"memcpy {kind} count", len(evs), want["count"])
        r.same(f"memcpy {kind} bytes", sum(int(args_of(e).get("bytes", 0)) for e in evs),
               want["bytes"])
        r.same(f"memcpy {kind} sizes", sizes_of(evs),
               dict(sorted(want["sizes"].items(), key=lambda kv: int(kv[0]))))
    for kind, evs in sorted(by_kind.items()):
        r.bad(f"memcpy {kind}: {len(evs)} copies, none expected")
    sets = t.slices["memset"]
    r.same("memset count", len(sets), exp["memset"]["count"])
    r.same("memset bytes", sum(int(args_of(e).get("bytes", 0)) for e in sets),
           exp["memset"]["bytes"])

    launchers = collections.defaultdict(set)  # (kind, bytes) -> launchers
    for tr in exp["transfers"]:
        launchers[(tr["kind"], int(tr["bytes"]))].add(tr["launcher"])
    found = collections.Counter()
    missing = []
    for cat in ("memcpy", "memset"):
        for e in t.slices[cat]:
            a = args_of(e)
            kind = "memset" if cat == "memset" else a.get("copy_kind", "")
            want = launchers.get((kind, int(a.get("bytes", -1))), set())
            api = t.arrow_from(e)
            prefix = "cudaMemset" if cat == "memset" else "cudaMemcpy"
            stack_ok = any(has_frame(a.get("stack"), w) for w in want)
            arrow_ok = api is not None and api["name"].startswith(prefix)
            found["stack"] += stack_ok
            found["arrow"] += arrow_ok
            if not (stack_ok and arrow_ok):
                missing.append((e, sorted(want), api))
    total = len(t.slices["memcpy"]) + len(t.slices["memset"])
    msg = (f"copies and memsets: {found['stack']} of {total} stacks hold their launcher, "
           f"{found['arrow']} of {total} arrows from their call")
    if not missing:
        r.ok(msg)
    elif strict:
        e, want, api = missing[0]
        r.bad(f"{msg}; one without: {e['name']} {args_of(e).get('bytes')} bytes, "
              f"launcher {'/'.join(want) or '?'}, stack "
              f"{short_stack(args_of(e).get('stack'))}, arrow from "
              f"{api['name'] if api else 'nothing'}")
    else:
        r.note(msg + " (required with --strict-transfers)")


def check_ranges(r, t, exp):
    want = {x["name"]: x for x in exp["ranges"]}
    ranges = t.slices["range"]
    got = collections.Counter(e["name"] for e in ranges)
    for x in exp["ranges"]:
        r.same(f"range {x['name']} count", got[x["name"]], x["count"])
    for name, n in sorted(got.items()):
        if name not in want:
            r.bad(f"range {name!r} ({n} times): not in the expectations")
    unfinished = [e["name"] for e in ranges if args_of(e).get("unfinished")]
    if unfinished:
        r.bad(f"{len(unfinished)} ranges unfinished (closed by the end of the thread or "
              f"session): {', '.join(sorted(set(unfinished)))}")
    lanes = [e["name"] for e in ranges if int(e["tid"]) >> LANE_SHIFT]
    if lanes:
        r.bad(f"{len(lanes)} ranges on overlap lanes (they did not nest): "
              f"{', '.join(sorted(set(lanes)))}")

    # The innermost enclosing range on the same thread (lanes folded back in) is the parent.
    threads = collections.defaultdict(list)
    for e in ranges:
        start = ns(e["ts"])
        tid = int(e["tid"]) & ((1 << LANE_SHIFT) - 1)
        threads[(e["pid"], tid)].append((start, -(start + ns(e.get("dur", 0))), e["name"]))
    wrong = collections.Counter()
    checked = 0
    for evs in threads.values():
        evs.sort()
        stack = []  # (start, end, name)
        for start, neg_end, name in evs:
            end = -neg_end
            while stack and not (stack[-1][0] <= start and end <= stack[-1][1]):
                stack.pop()
            parent = stack[-1][2] if stack else None
            if name in want:
                checked += 1
                if parent != want[name]["parent"]:
                    wrong[(name, parent, want[name]["parent"])] += 1
            stack.append((start, end, name))
    for (name, parent, expected), n in sorted(wrong.items(), key=str):
        r.bad(f"range {name}: {n} inside {parent or 'nothing'}, expected inside "
              f"{expected or 'nothing'}")
    if not wrong:
        r.ok(f"ranges nest as expected ({checked} checked)")


def check_stats(r, stats, exp, kernels):
    ks = stats.get("kernels", {})
    got = collections.Counter()
    for row in ks.get("by_name", []):
        entry = kernels.find(row.get("name", ""))
        if entry is None:
            r.bad(f"stats.json: kernel {row.get('name')!r} ({row.get('count')} runs) "
                  f"not in the expectations")
        else:
            got[entry["name"]] += row.get("count", 0)
    for entry in exp["kernels"]:
        r.same(f"stats.json kernel {entry['name']} count", got[entry["name"]], entry["count"])
    r.same("stats.json kernels.count", ks.get("count"), exp["kernel_count"])
    rows = {row.get("kind"): row for row in stats.get("memcpy", {}).get("by_kind", [])}
    for kind, want in exp["memcpy"].items():
        row = rows.pop(kind, {})
        r.same(f"stats.json memcpy {kind}", (row.get("count", 0), row.get("bytes", 0)),
               (want["count"], want["bytes"]))
    for kind, row in sorted(rows.items(), key=str):
        r.bad(f"stats.json memcpy {kind}: {row.get('count')} copies, none expected")
    ms = stats.get("memset", {})
    r.same("stats.json memset", (ms.get("count"), ms.get("bytes")),
           (exp["memset"]["count"], exp["memset"]["bytes"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[2:]))
    p.add_argument("--expect", required=True, help="cuda_workload --expect output")
    p.add_argument("--min-stack-pct", type=float, default=100.0)
    p.add_argument("--strict-transfers", action="store_true")
    p.add_argument("--no-stats", action="store_true")
    p.add_argument("--json", help="write the findings here")
    p.add_argument("dir", help="the record -o folder (trace.json, stats.json)")
    try:
        a = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 100)

    exp = load_json(a.expect)
    if not isinstance(exp, dict) or exp.get("xpusup_cuda_workload") != 1:
        die(f"use {a.expect}: not a cuda_workload --expect object (version 1)", 100)
    doc = load_json(os.path.join(a.dir, "trace.json"))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        die(f"use {a.dir}/trace.json: no traceEvents array")
    r = Report()
    t = Trace(doc)
    kernels = Kernels(exp["kernels"])
    check_kernels(r, t, exp, kernels, a.min_stack_pct)
    check_api(r, t, exp)
    check_transfers(r, t, exp, a.strict_transfers)
    check_ranges(r, t, exp)
    if not a.no_stats:
        check_stats(r, load_json(os.path.join(a.dir, "stats.json")), exp, kernels)
    if a.json:
        counts = {cat: len(evs) for cat, evs in sorted(t.slices.items(), key=str)}
        with open(a.json, "w") as f:
            json.dump({"ok": r.oks, "mismatches": r.mismatches, "notes": r.notes,
                       "slices_by_cat": counts}, f, indent=1)
    n = len(r.mismatches)
    print(f"check_trace: {len(r.oks)} checks ok, {n} mismatch{'es' if n != 1 else ''}")
    sys.exit(1 if n else 0)


if __name__ == "__main__":
    main()
