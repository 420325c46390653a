#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""perf_folded: perf's CPU profile in xpusup's folded format, to compare the two.

    perf_folded.py collapse [--weight samples|period] < perf-script.txt > out.folded
    perf_folded.py shares FILE.folded NAME...
    perf_folded.py compare [--tolerance POINTS] A.folded B.folded NAME...
    perf_folded.py selftest

collapse folds the text of `perf script` (of a `perf record -g`) into one line per distinct
stack, `comm;outermost;...;innermost COUNT`, the format of xpusup's folded sink and of
flamegraph.pl: user frames outermost first, kernel frames with a `_[k]` suffix, `+0x..`
offsets and `(dso)` parts stripped, a frame perf could not name written `[DSO basename]`
(or `[unknown]`). COUNT is the number of samples, or with `--weight period` the sum of
their periods (ns for cpu-clock, like xpusup's default `weight = ns`).

shares prints, as JSON, for each NAME the fraction of the total weight whose stack contains
a field equal to NAME (a frame, or the comm), each stack counted once however many times
the name recurs in it: inclusive shares, comparable between sample counts and ns weights.

compare prints both files' shares and their difference in percentage points, and exits 1
when one differs by more than --tolerance points (default 5), 0 otherwise. Usage errors
exit 100 and unreadable files 111.

Python 3 standard library only.
"""

import argparse
import json
import os
import re
import sys

# The first line of a sample: "comm pid[/tid] [cpu] [time:] [period] event:[ ip sym (dso)]".
# comm may hold spaces, so it is everything before the first "pid" or "pid/tid" field that
# is followed by a time, a [cpu] or the period and event name.
HEADER = re.compile(
    r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[\d+\]\s+)?(?:\d+\.\d+:\s+)?(?:(?P<period>\d+)\s+)?"
    r"(?P<event>[^\s:][^\s]*?):\s*(?P<rest>.*)$"
)
# One frame: "\t    addr sym+0xoff (dso)", sym may be absent ("addr (dso)")
FRAME = re.compile(r"^\s*(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)\s*$")
OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
# x86-64, arm64: kernel text lives in the top half of the address space
KERNEL_ADDR = 0xFFFF800000000000


def frame_name(addr, sym, dso):
    """The folded name of one perf frame: symbol without offset, `_[k]` for the kernel."""
    sym = OFFSET.sub("", sym.strip())
    kernel = dso.startswith("[kernel.") or (dso.startswith("[") and int(addr, 16) >= KERNEL_ADDR)
    if not sym or sym == "[unknown]":
        base = os.path.basename(dso) if dso and dso != "[unknown]" else ""
        if base.startswith("[") and base.endswith("]"):
            base = base[1:-1]
        sym = "[%s]" % base if base else "[unknown]"
    # the folded format's separators: ';' between frames, the last ' ' before the count
    sym = sym.replace(";", ":")
    return sym + "_[k]" if kernel else sym


def collapse(text, weight="samples"):
    """Folds `perf script` text into {stack: count}; stack is 'comm;outermost;...;innermost'.

    weight 'samples' counts each sample once; 'period' adds the sample's period (the
    samples without a period printed count as 1)."""
    folded = {}
    comm = None
    frames = []
    amount = 1

    def flush():
        if comm is None:
            return
        stack = ";".join([comm] + frames[::-1])
        folded[stack] = folded.get(stack, 0) + amount

    for line in text.splitlines():
        if not line.strip():
            flush()
            comm = None
            frames = []
            continue
        if not line[0].isspace():
            m = HEADER.match(line)
            flush()
            frames = []
            if not m:
                comm = None  # a line of some other kind: not a sample
                continue
            comm = m.group("comm").strip().replace(";", ":")
            amount = int(m.group("period")) if weight == "period" and m.group("period") else 1
            # without -g the one frame is on the header line
            f = FRAME.match(m.group("rest")) if m.group("rest") else None
            if f:
                frames.append(frame_name(f.group("addr"), f.group("sym"), f.group("dso")))
            continue
        if comm is None:
            continue
        f = FRAME.match(line)
        if f:
            frames.append(frame_name(f.group("addr"), f.group("sym"), f.group("dso")))
    flush()
    return folded


def parse_folded(text):
    """{stack: count} from folded text ('stack COUNT' lines, the count after the last space)."""
    folded = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not stack:
            raise ValueError("line %d: no 'stack COUNT': %r" % (n, line[:80]))
        try:
            folded[stack] = folded.get(stack, 0) + int(count)
        except ValueError:
            raise ValueError("line %d: count is not an integer: %r" % (n, count)) from None
    return folded


def format_folded(folded):
    return "".join("%s %d\n" % (stack, folded[stack]) for stack in sorted(folded))


def shares(folded, names):
    """{name: fraction of the total weight whose stack has a field equal to name}.

    Inclusive: a stack counts once per name however often the name recurs in it. The
    fractions are 0 for an empty profile."""
    total = sum(folded.values())
    out = {name: 0 for name in names}
    for stack, count in folded.items():
        fields = set(stack.split(";"))
        for name in names:
            if name in fields:
                out[name] += count
    return {name: (out[name] / total if total else 0.0) for name in names}


def compare(a, b, names, tolerance):
    """(report, ok): both shares and b - a in percentage points; ok when every |b - a| is at
    most tolerance points."""
    sa, sb = shares(a, names), shares(b, names)
    report = {"samples": {"a": sum(a.values()), "b": sum(b.values())}, "tolerance": tolerance,
              "names": {}}
    ok = True
    for name in names:
        diff = (sb[name] - sa[name]) * 100
        within = abs(diff) <= tolerance
        ok = ok and within
        report["names"][name] = {"a": round(sa[name], 4), "b": round(sb[name], 4),
                                 "diff_points": round(diff, 2), "ok": within}
    report["ok"] = ok
    return report, ok


# A hand-written `perf script` of 5 samples: a header with tid and cpu, kernel frames, an
# unnamed frame, a comm with a space, one sample without a callchain, a non-sample line.
SELFTEST_SCRIPT = """\
hotspots 12235/12236 [001] 16545.867599:    1000000 cpu-clock:
\t            139a hotspots_hot_leaf+0x29 (/work/build/hotspots)
\t            1415 hotspots_walk+0x2c (/work/build/hotspots)
\t            1404 hotspots_walk+0x1b (/work/build/hotspots)
\t            1469 worker_main+0x31 (/work/build/hotspots)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

hotspots 12235/12236 [001] 16545.868599:    1000000 cpu-clock:
\tffffffff81e0a1b0 __sysvec_apic_timer_interrupt+0x50 ([kernel.kallsyms])
\tffffffff81001c2a asm_sysvec_apic_timer_interrupt+0x1a ([kernel.kallsyms])
\t            139a hotspots_hot_leaf+0x29 (/work/build/hotspots)
\t            1415 hotspots_walk+0x2c (/work/build/hotspots)
\t            1404 hotspots_walk+0x1b (/work/build/hotspots)
\t            1469 worker_main+0x31 (/work/build/hotspots)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

hotspots 12235/12236 [000] 16545.869599:    3000000 cpu-clock:
\t            13dd hotspots_cold_leaf+0x30 (/work/build/hotspots)
\t            1420 hotspots_walk+0x37 (/work/build/hotspots)
\t            1469 worker_main+0x31 (/work/build/hotspots)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

Web Content  4242 16545.870000:    1000000 cpu-clock:
\t    7f0012345678 [unknown] (/usr/lib/firefox/libxul.so)
\t    7f0012345000 [unknown] ([unknown])

kworker/0:1  17 16545.871000:    1000000 cpu-clock:  ffffffff81234567 worker_thread+0x10 ([kernel.kallsyms])

not a sample line at all
"""

SELFTEST_FOLDED = {
    "hotspots;start_thread;worker_main;hotspots_walk;hotspots_walk;hotspots_hot_leaf": 1,
    "hotspots;start_thread;worker_main;hotspots_walk;hotspots_walk;hotspots_hot_leaf;"
    "asm_sysvec_apic_timer_interrupt_[k];__sysvec_apic_timer_interrupt_[k]": 1,
    "hotspots;start_thread;worker_main;hotspots_walk;hotspots_cold_leaf": 1,
    "Web Content;[unknown];[libxul.so]": 1,
    "kworker/0:1;worker_thread_[k]": 1,
}


def selftest():
    failures = []
    checks = [0]

    def check(what, got, want):
        checks[0] += 1
        if got != want:
            failures.append(what)
            print("not ok - %s\n#   got:  %r\n#   want: %r" % (what, got, want))
        else:
            print("ok - %s" % what)

    folded = collapse(SELFTEST_SCRIPT)
    check("collapse: stacks and sample counts", folded, SELFTEST_FOLDED)
    by_period = collapse(SELFTEST_SCRIPT, weight="period")
    check("collapse --weight period", sorted(by_period.values()),
          [1000000, 1000000, 1000000, 1000000, 3000000])
    text = format_folded(folded)
    check("folded text round trip", parse_folded(text), folded)
    check("folded text sorted, one line per stack", text.splitlines(),
          sorted("%s %d" % kv for kv in SELFTEST_FOLDED.items()))
    s = shares(folded, ["hotspots_walk", "hotspots_hot_leaf", "hotspots_cold_leaf",
                        "worker_thread_[k]", "Web Content", "absent"])
    check("shares: inclusive, recursion counted once",
          s, {"hotspots_walk": 0.6, "hotspots_hot_leaf": 0.4, "hotspots_cold_leaf": 0.2,
              "worker_thread_[k]": 0.2, "Web Content": 0.2, "absent": 0.0})
    s = shares(by_period, ["hotspots_cold_leaf"])
    check("shares by weight", s, {"hotspots_cold_leaf": 3 / 7})
    check("shares of nothing", shares({}, ["x"]), {"x": 0.0})
    _, ok = compare(folded, by_period, ["hotspots_cold_leaf"], 5)
    check("compare: 20 % against 43 % is outside 5 points", ok, False)
    _, ok = compare(folded, by_period, ["hotspots_walk"], 20)
    check("compare: 60 % against 71 % is inside 20 points", ok, True)
    try:
        parse_folded("a;b\n")
        check("parse_folded rejects a line without a count", "accepted", "rejected")
    except ValueError:
        check("parse_folded rejects a line without a count", "rejected", "rejected")
    print("1..%d" % checks[0])
    return 1 if failures else 0


def read_folded(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_folded(f.read())


def main(argv):
    p = argparse.ArgumentParser(prog="perf_folded.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collapse", help="perf script text on stdin -> folded on stdout")
    c.add_argument("--weight", choices=["samples", "period"], default="samples")
    s = sub.add_parser("shares", help="inclusive shares of NAMEs in a folded file, as JSON")
    s.add_argument("file")
    s.add_argument("names", nargs="+")
    m = sub.add_parser("compare", help="shares in two folded files; exit 1 past tolerance")
    m.add_argument("--tolerance", type=float, default=5.0, help="points (default 5)")
    m.add_argument("a")
    m.add_argument("b")
    m.add_argument("names", nargs="+")
    sub.add_parser("selftest", help="check collapse and shares on a hand-written snippet")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 100

    if args.cmd == "selftest":
        return selftest()
    try:
        if args.cmd == "collapse":
            text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
            sys.stdout.write(format_folded(collapse(text, args.weight)))
            return 0
        if args.cmd == "shares":
            print(json.dumps(shares(read_folded(args.file), args.names), indent=1))
            return 0
        report, ok = compare(read_folded(args.a), read_folded(args.b), args.names,
                             args.tolerance)
        report["a_file"], report["b_file"] = args.a, args.b
        print(json.dumps(report, indent=1))
        return 0 if ok else 1
    except (OSError, ValueError) as e:
        print("perf_folded: unable to read: %s" % e, file=sys.stderr)
        return 111


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
