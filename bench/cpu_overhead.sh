#!/bin/bash
# cpu_overhead: how much a CPU sampler slows a CPU-bound program. The program is the hotspots
# workload (tests/workloads/hotspots.c) with a fixed amount of work (--work ROUNDS), so what a
# sampler costs shows as a longer run, not as fewer rounds. It runs alone (the baseline), then
# at each frequency under:
#   perf      perf record -F HZ -g -e cpu-clock -o TMPFS/perf.data -- PROG
#   perf-dwarf  perf record -F HZ --call-graph dwarf -e cpu-clock -o TMPFS/perf.data -- PROG
#             (8 KiB of user stack copied per sample, unwound by perf report/script later)
#   bpftrace  bpftrace -e 'profile:hz:HZ { @[ustack, kstack] = count(); }' -c PROG
#             (system-wide, as written: it samples every CPU, the workload's and the idle one)
#   xpusup    xpusup record -o TMPFS/DIR -F HZ -- PROG: the built-in pipeline (the cpu source
#             on PROG's tree at HZ, one correlator, the folded, timeline and stats sinks),
#             unwind = auto: 16 KiB of user stack copied per sample, unwound in the correlator
#   xpusup-fp the same with --unwind fp (frame pointers walked in the kernel, no copy)
#             ("n/a" when this build's `xpusup record` is the placeholder of an older tree)
# Every output goes to a tmpfs (/dev/shm), removed after each run. The runs of one repetition
# go in one order, those of the next in the reverse order, so drift (other load, frequency)
# falls on every column alike. For each tool and frequency, the table gives the medians of:
#   workload wall, CPU  what hotspots measures itself from its first round to its last
#                       (clock_gettime, getrusage), so the tools' start and stop are excluded;
#                       the ratio is against the baseline's median
#   whole command       the wall time of the whole command line, tool start-up, the workload,
#                       the tool's shutdown (perf's build-id pass, bpftrace printing its map)
#   other CPU           CPU time the whole machine was busy during the command (/proc/stat,
#                       1/100 s ticks), less the workload's: the tool's processes (perf,
#                       bpftrace, the xpusup session's actors) and whatever else runs; the
#                       baseline's shows that background
#   samples             perf: what perf record says it wrote; bpftrace: the sum of its map
#                       (every CPU); xpusup: the weight in flame.folded (ns -> samples at HZ)
# Any run that fails (a non-zero exit, no hotspots summary, no samples) stops the bench with a
# message and exit 1; a missing tool or usage error exits 100/111 before anything runs.
#
# Usage: bench/cpu_overhead.sh [--build DIR] [--reps N] [--work ROUNDS] [--hz "99 999"]
#                              [--tools "perf bpftrace xpusup"] [--nice N]    (as root)
set -u
BUILD=build/release
REPS=5
WORK=10000
HZ_LIST="99 999"
TOOLS="perf perf-dwarf bpftrace xpusup xpusup-fp"
NICE=-20

usage() {
	sed -n '/^# Usage:/,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	echo "  --build DIR     the meson build folder with tests/workloads/hotspots and"
	echo "                  cli/xpusup (default build/release)"
	echo "  --reps N        repetitions of every run (default 5)"
	echo "  --work ROUNDS   hotspots rounds (default 10000: about 4 s on the VM of docs/performance.md)"
	echo "  --hz LIST       sampling frequencies (default \"99 999\")"
	echo "  --tools LIST    of perf, perf-dwarf, bpftrace, xpusup, xpusup-fp (default all)"
	echo "  --nice N        run every command (tool, workload, session) at niceness N (default"
	echo "                  -20, so that other load on the machine disturbs the runs less; 0: as is)"
}
die() {
	echo "cpu_overhead: $*" >&2
	exit 111
}

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=${2:?--build needs a folder}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--work) WORK=${2:?--work needs a number}; shift 2 ;;
	--hz) HZ_LIST=${2:?--hz needs a list}; shift 2 ;;
	--tools) TOOLS=${2:?--tools needs a list}; shift 2 ;;
	--nice) NICE=${2:?--nice needs a number}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 100 ;;
	esac
done
case $REPS in '' | *[!0-9]* | 0) echo "cpu_overhead: --reps must be a positive integer" >&2; exit 100 ;; esac
case $WORK in '' | *[!0-9]* | 0) echo "cpu_overhead: --work must be a positive integer" >&2; exit 100 ;; esac
case $NICE in '' | *[!0-9-]* | *?-*) echo "cpu_overhead: --nice must be an integer" >&2; exit 100 ;; esac
if [ "$NICE" -lt -20 ] || [ "$NICE" -gt 19 ]; then
	echo "cpu_overhead: --nice must be in -20..19" >&2
	exit 100
fi
for hz in $HZ_LIST; do
	case $hz in '' | *[!0-9]* | 0) echo "cpu_overhead: bad frequency: $hz" >&2; exit 100 ;; esac
done
[ -n "$HZ_LIST" ] || { echo "cpu_overhead: --hz is empty" >&2; exit 100; }
for t in $TOOLS; do
	case $t in perf | perf-dwarf | bpftrace | xpusup | xpusup-fp) ;; *) echo "cpu_overhead: unknown tool: $t" >&2; exit 100 ;; esac
done

[ "$(id -u)" = 0 ] || die "unable to run: needs root (bpftrace and the BPF sampler load BPF programs)"
HOTSPOTS=$BUILD/tests/workloads/hotspots
XPUSUP=$BUILD/cli/xpusup
[ -x "$HOTSPOTS" ] || die "unable to find $HOTSPOTS: build it (ninja -C $BUILD) or pass --build"
for t in $TOOLS; do
	case $t in
	perf | perf-dwarf | bpftrace) command -v "${t%-dwarf}" >/dev/null 2>&1 ||
		die "unable to find $t: scripts/install-deps installs it" ;;
	xpusup | xpusup-fp) [ -x "$XPUSUP" ] || die "unable to find $XPUSUP: build it or leave xpusup out of --tools" ;;
	esac
done
{ [ -d /dev/shm ] && [ -w /dev/shm ]; } || die "unable to use /dev/shm: the outputs go to a tmpfs"
TMP=$(mktemp -d /dev/shm/xpusup-cpubench-XXXXXX) || die "unable to make a folder in /dev/shm"
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

/usr/bin/python3 - "$TMP" "$HOTSPOTS" "$XPUSUP" "$REPS" "$WORK" "$HZ_LIST" "$TOOLS" "$NICE" <<'PYEOF'
import os, re, shutil, signal, statistics, subprocess, sys, time

tmp, hotspots, xpusup = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
reps, work = int(sys.argv[4]), int(sys.argv[5])
hz_list, tools = [int(h) for h in sys.argv[6].split()], sys.argv[7].split()
nice = int(sys.argv[8])
SUMMARY = re.compile(r"^hotspots: .* rounds, wall ([0-9.]+) s, cpu ([0-9.]+) s", re.M)
PERF_SAMPLES = re.compile(r"\(([0-9]+) samples\)")
NOT_BUILT = "not available in this build"


class Failure(Exception):
    pass


def prog(w):
    return [hotspots, "--work", str(w)]


def command(tool, hz, w):
    """(argv, output path) of one run; the output is checked then removed."""
    if tool == "baseline":
        return prog(w), None
    if tool in ("perf", "perf-dwarf"):
        out = os.path.join(tmp, "perf.data")
        graph = ["-g"] if tool == "perf" else ["--call-graph", "dwarf"]
        return ["perf", "record", "-F", str(hz)] + graph + ["-e", "cpu-clock", "-o", out,
                                                            "--"] + prog(w), out
    if tool == "bpftrace":
        out = os.path.join(tmp, "bpftrace.out")
        return ["bpftrace", "-o", out, "-e",
                "profile:hz:%d { @[ustack, kstack] = count(); }" % hz,
                "-c", " ".join(prog(w))], out
    # the built-in pipeline (cpu source on the command's tree, one correlator, the folded,
    # timeline and stats sinks) at HZ: what a user's `xpusup record` runs
    out = os.path.join(tmp, "xpusup-out")
    unwind = ["--unwind", "fp"] if tool == "xpusup-fp" else []
    return [xpusup, "record", "-o", out, "-F", str(hz)] + unwind + ["--"] + prog(w), out


def busy_seconds():
    """CPU time the whole machine spent busy (user, nice, system, irq, softirq) since boot:
    the xpusup session's actors are not children of `xpusup record`, so only a system-wide
    count sees every tool's CPU alike."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    user, nice, system, idle, iowait, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def run(argv, timeout=900):
    """Runs argv in its own process group, stdin closed; returns (rc, stdout+stderr, wall s,
    busy CPU s of the whole machine meanwhile). Kills the group when interrupted or too
    slow."""
    if nice:
        argv = ["nice", "-n", str(nice)] + argv
    before = busy_seconds()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except BaseException:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
                p.wait(timeout=10)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        raise
    wall = time.monotonic() - t0
    return p.returncode, out.decode("utf-8", "replace"), wall, busy_seconds() - before


def samples(tool, hz, out, text):
    if tool in ("perf", "perf-dwarf"):
        m = PERF_SAMPLES.search(text)
        return int(m.group(1)) if m else 0
    if tool == "bpftrace":
        with open(out, errors="replace") as f:
            return sum(int(n) for n in re.findall(r"\]: ([0-9]+)$", f.read(), re.M))
    folded = os.path.join(out, "flame.folded")
    weight = 0
    if os.path.exists(folded):
        with open(folded, errors="replace") as f:
            for line in f:
                head, _, n = line.rstrip("\n").rpartition(" ")
                if head and n.isdigit():
                    weight += int(n)
    # the folded sink's default weight is ns: a sample at HZ weighs about 1e9 / HZ
    return round(weight * hz / 1e9) if weight > 1e6 else weight


def one(tool, hz, w=None):
    argv, out = command(tool, hz, w or work)
    try:
        rc, text, wall, cpu = run(argv)
        name = tool if tool == "baseline" else "%s at %d Hz" % (tool, hz)
        if rc != 0:
            raise Failure("unable to run %s: exit %d:\n  %s\n%s" % (
                name, rc, " ".join(argv), text[-2000:]))
        m = SUMMARY.search(text)
        if not m:
            raise Failure("unable to run %s: no hotspots summary in its output:\n%s" % (
                name, text[-2000:]))
        n = samples(tool, hz, out, text) if out else 0
        if out and n == 0:
            raise Failure("unable to run %s: it recorded no samples (too little --work?):\n%s" % (
                name, text[-2000:]))
        return {"wall": float(m.group(1)), "cpu": float(m.group(2)), "e2e": wall,
                "other_cpu": max(0.0, cpu - float(m.group(2))), "samples": n}
    finally:
        if out and os.path.isdir(out):
            shutil.rmtree(out, ignore_errors=True)
        elif out and os.path.exists(out):
            os.unlink(out)


def xpusup_available():
    """False when this build's `xpusup record` is the placeholder; a real one that fails on a
    short run is a failure, not n/a."""
    argv, out = command("xpusup", hz_list[0], 1)
    try:
        rc, text, _, _ = run(argv, timeout=120)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if rc != 0 and NOT_BUILT in text:
        return False
    return True


def main():
    available = {t: True for t in tools}
    if "xpusup" in tools:
        available["xpusup"] = xpusup_available()
    configs = [("baseline", 0)] + [(t, hz) for hz in hz_list for t in tools if available[t]]
    load = os.getloadavg()[0]
    print("cpu_overhead: %s --work %d, %d repetitions, %d runs, nice %d; load average %.2f" % (
        hotspots, work, reps, reps * len(configs), nice, load), file=sys.stderr)
    # one short run of each (a tenth of the work, at least 0.2 s), to fail early and to warm
    # caches (the page cache, bpftrace's)
    for tool, hz in configs:
        one(tool, hz, max(work // 10, min(work, 500)))
    results = {c: [] for c in configs}
    for r in range(reps):
        for c in (configs if r % 2 == 0 else configs[::-1]):
            res = one(*c)
            results[c].append(res)
            print("  rep %d %-8s %4s Hz: workload wall %.3f s, cpu %.3f s, whole %.3f s" % (
                r + 1, c[0], c[1] or "-", res["wall"], res["cpu"], res["e2e"]),
                file=sys.stderr)

    med = {c: {k: statistics.median(x[k] for x in v) for k in v[0]} for c, v in results.items()}
    base = med[("baseline", 0)]
    print("hotspots --work %d (1 thread), %d repetitions, medians, nice %d; nproc %d, load "
          "average %.2f at the start" % (work, reps, nice, os.cpu_count(), load))
    print()
    print("| tool | Hz | workload wall | ratio | wall min-max | workload CPU | ratio "
          "| whole command | other CPU | samples |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = [("baseline", 0)] + [(t, hz) for hz in hz_list for t in tools]
    for c in rows:
        tool, hz = c
        if c not in med:
            print("| %s | %d | n/a (xpusup record not built) | | | | | | | |" % (tool, hz))
            continue
        m, walls = med[c], [x["wall"] for x in results[c]]
        print("| %s | %s | %.3f s | %.3f | %.3f-%.3f | %.3f s | %.3f | %.3f s | %.3f s | %s |" % (
            tool, hz or "-", m["wall"], m["wall"] / base["wall"], min(walls), max(walls),
            m["cpu"], m["cpu"] / base["cpu"], m["e2e"], m["other_cpu"],
            "%d" % m["samples"] if tool != "baseline" else "-"))
    return 0


try:
    sys.exit(main())
except Failure as e:
    print("cpu_overhead: %s" % e, file=sys.stderr)
    sys.exit(1)
except KeyboardInterrupt:
    sys.exit(130)
PYEOF
