#!/usr/bin/python3
"""check_trace.py on hand-written record outputs (testdata/, in the timeline sink's format):
the good one passes; the bad one fails naming each mistake planted in it; then one mistake at
a time, made in a copy of the good one, fails naming that mistake, and the options and kernel
name forms do what check_trace.py says. TAP on stdout.

Usage: check_trace_test.py"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_trace.py")
DATA = os.path.join(HERE, "testdata")
EXPECT = os.path.join(DATA, "expect.json")
n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {what}", flush=True)
    if not cond:
        failed += 1
        for line in detail.splitlines()[-25:]:
            print(f"#   {line}")


def run(folder, *opts, expect=EXPECT):
    p = subprocess.run([sys.executable, CHECK, "--expect", expect, *opts, folder],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def mismatches(out):
    return [line for line in out.splitlines() if line.startswith("MISMATCH:")]


def load(name):
    with open(os.path.join(DATA, "good", name)) as f:
        return json.load(f)


GOOD_TRACE = load("trace.json")
GOOD_STATS = load("stats.json")


def write(folder, trace, stats):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "trace.json"), "w") as f:
        json.dump(trace, f)
    if stats is not None:
        with open(os.path.join(folder, "stats.json"), "w") as f:
            json.dump(stats, f)


def events(trace, cat=None, name=None, ph="X"):
    return [e for e in trace["traceEvents"] if e.get("ph") == ph and
            (cat is None or e.get("cat") == cat) and (name is None or e["name"] == name)]


def arrow_ids(trace, e):
    return [f["id"] for f in events(trace, "launch", ph="f")
            if f["tid"] == e["tid"] and f["ts"] == e["ts"]]


# ---- mutations: (what, function(trace, stats), texts every one of which a MISMATCH holds) ----

def drop_kernel(t, s):
    k = events(t, "kernel", "_Z7vec_addPKfS0_Pfi")[0]
    t["traceEvents"].remove(k)


def rename_kernel(t, s):
    events(t, "kernel", "_Z10graph_fillPffi")[0]["name"] = "_Z10graph_fillPfii"


def strip_launcher(t, s):
    k = events(t, "kernel", "_Z10graph_fillPffi")[1]
    k["args"]["stack"] = [f for f in k["args"]["stack"] if f != "launch_graph_fill"]


def no_stack(t, s):
    del events(t, "kernel", "_Z7vec_addPKfS0_Pfi")[1]["args"]["stack"]


def no_graph_arg(t, s):
    del events(t, "kernel", "_Z10graph_fillPffi")[0]["args"]["graph"]


def graph_arg_on_plain(t, s):
    events(t, "kernel", "_Z7vec_addPKfS0_Pfi")[0]["args"]["graph"] = 1


def drop_arrow(t, s):
    k = events(t, "kernel", "_Z10graph_fillPffi")[0]
    ids = arrow_ids(t, k)
    t["traceEvents"] = [e for e in t["traceEvents"]
                        if not (e.get("ph") in ("s", "f") and e.get("id") in ids)]


def arrow_from_other_call(t, s):
    # the graph kernel's arrow now starts on a cudaLaunchKernel slice
    k = events(t, "kernel", "_Z10graph_fillPffi")[0]
    api = events(t, "cuda_api", "cudaLaunchKernel")[0]
    for e in t["traceEvents"]:
        if e.get("ph") == "s" and e.get("id") in arrow_ids(t, k):
            e["ts"] = api["ts"]


def fewer_graph_launches(t, s):
    t["traceEvents"].remove(events(t, "cuda_api", "cudaGraphLaunch")[-1])


def captured_call_lost(t, s):
    api = [e for e in events(t, "cuda_api") if e["args"]["api_id"] in (211, 505)
           and not any(f.get("ts") == e["ts"] for f in events(t, "launch", ph="s"))][0]
    t["traceEvents"].remove(api)


def driver_call_outside(t, s):
    # a cuLaunchKernel no longer inside its runtime call: a launch call of its own
    events(t, "cuda_api", "cuLaunchKernel")[0]["ts"] -= 50


def copy_bytes(t, s):
    events(t, "memcpy", "memcpy HtoD")[0]["args"]["bytes"] = 4000


def copy_kind(t, s):
    c = events(t, "memcpy", "memcpy DtoH")[0]
    c["name"], c["args"]["copy_kind"] = "memcpy DtoD", "DtoD"


def extra_copy(t, s):
    t["traceEvents"].append(copy.deepcopy(events(t, "memcpy", "memcpy HtoD")[0]))


def memset_lost(t, s):
    t["traceEvents"].remove(events(t, "memset")[0])


def memcpy_call_lost(t, s):
    t["traceEvents"].remove(events(t, "cuda_api", "cudaMemcpy")[0])


def range_lost(t, s):
    t["traceEvents"].remove(events(t, "range", "teardown")[0])


def range_renamed(t, s):
    events(t, "range", "setup")[0]["name"] = "set-up"


def range_unfinished(t, s):
    events(t, "range", "workload")[0]["args"]["unfinished"] = True


def range_on_lane(t, s):
    events(t, "range", "graph")[0]["tid"] += 1 << 22


def range_outside_parent(t, s):
    # the compute range ends before its second iteration
    events(t, "range", "compute")[0]["dur"] = 140.0


def stats_kernel(t, s):
    s["kernels"]["by_name"][0]["count"] += 1


def stats_copy(t, s):
    s["memcpy"]["by_kind"][0]["bytes"] += 1


MUTATIONS = [
    ("a kernel run lost", drop_kernel, ["kernel vec_add runs: 1, expected 2",
                                        "kernels in all: 5, expected 6"]),
    ("a kernel of another name", rename_kernel, ["'_Z10graph_fillPfii' ran 1 times",
                                                 "kernel graph_fill runs: 1"]),
    ("a graph kernel's stack without its node's launcher", strip_launcher,
     ["graph_fill: 1 of 2 launch stacks hold launch_graph_fill"]),
    ("a kernel without a stack", no_stack,
     ["vec_add: 1 of 2 launch stacks hold launch_vec_add (1 with a stack)"]),
    ("a graph kernel without its graph arg", no_graph_arg,
     ["graph kernel graph_fill: 1 of 2 runs without a graph arg"]),
    ("a plain kernel with a graph arg", graph_arg_on_plain,
     ["kernel vec_add: 1 runs carry a graph arg"]),
    ("a kernel without its arrow", drop_arrow,
     ["graph_fill: 1 of 2 arrows from graph launch calls; 1 from none"]),
    ("a graph kernel's arrow from cudaLaunchKernel", arrow_from_other_call,
     ["graph_fill: 1 of 2 arrows from graph launch calls; 1 from cudaLaunchKernel"]),
    ("a cudaGraphLaunch call missing", fewer_graph_launches,
     ["graph launch calls (cuda driver 514, cudaGraphLaunch): 1, expected 2"]),
    ("the launch call made while capturing missing", captured_call_lost,
     ["kernel launch calls (cuLaunchKernel, cuda runtime 505, cudaLaunchKernel): 4, "
      "expected 5"]),
    ("a driver launch call outside any runtime call", driver_call_outside,
     ["kernel launch calls (cuLaunchKernel, cuda runtime 505, cudaLaunchKernel): 6, "
      "expected 5"]),
    ("a copy of the wrong size", copy_bytes,
     ["memcpy HtoD bytes: 4512, expected 4608", "memcpy HtoD sizes"]),
    ("a copy of the wrong kind", copy_kind,
     ["memcpy DtoH count: 0, expected 1", "memcpy DtoD: 1 copies, none expected"]),
    ("one copy too many", extra_copy, ["memcpy HtoD count: 4, expected 3"]),
    ("the memset lost", memset_lost, ["memset count: 0, expected 1"]),
    ("a cudaMemcpy call lost", memcpy_call_lost, ["cudaMemcpy calls: 3, expected 4"]),
    ("a range lost", range_lost, ["range teardown count: 0, expected 1"]),
    ("a range of another name", range_renamed,
     ["range 'set-up' (1 times): not in the expectations"]),
    ("an unfinished range", range_unfinished, ["1 ranges unfinished", "workload"]),
    ("a range on an overlap lane", range_on_lane, ["1 ranges on overlap lanes", "graph"]),
    ("a range outside its parent", range_outside_parent,
     ["range iteration: 1 inside workload, expected inside compute"]),
    ("stats.json: a kernel count", stats_kernel, ["stats.json kernel"]),
    ("stats.json: copied bytes", stats_copy, ["stats.json memcpy HtoD: (3, 4609)"]),
]


def main():
    print("TAP version 13", flush=True)
    rc, out = run(os.path.join(DATA, "good"))
    ok(rc == 0 and not mismatches(out) and "0 mismatches" in out,
       "the good record output passes", out)
    ok(out.count("ok: ") >= 35, "the good output is checked in full (35 or more checks)", out)

    rc, out = run(os.path.join(DATA, "bad"))
    planted = ["kernel vec_add runs: 1, expected 2",
               "kernel '_Z7vec_subPKfS0_Pfi' ran 1 times",
               "graph kernel graph_fill: 1 of 2 runs without a graph arg",
               "saxpy_tiled<float, 4>: 1 of 2 launch stacks hold launch_saxpy_tiled",
               "saxpy_tiled<float, 4>: 1 of 2 arrows from kernel launch calls; 1 from none",
               "memcpy DtoH bytes: 2048, expected 4096",
               "range iteration: 1 inside workload, expected inside compute",
               "stats.json memset: (2, 1024), expected (1, 1024)"]
    bad = mismatches(out)
    ok(rc == 1, "the bad record output fails (exit 1)", out)
    for text in planted:
        ok(any(text in line for line in bad), f"the bad output: MISMATCH {text!r}", out)

    with tempfile.TemporaryDirectory(prefix="check_trace_test.") as tmp:
        for i, (what, mutate, texts) in enumerate(MUTATIONS):
            t, s = copy.deepcopy(GOOD_TRACE), copy.deepcopy(GOOD_STATS)
            mutate(t, s)
            folder = os.path.join(tmp, f"m{i}")
            write(folder, t, s)
            rc, out = run(folder)
            bad = mismatches(out)
            found = all(any(text in line for line in bad) for text in texts)
            ok(rc == 1 and found, f"{what}: exit 1, MISMATCH {texts}", out)

        # name forms: CUPTI's demangled spelling may differ from c++filt's
        t = copy.deepcopy(GOOD_TRACE)
        for e in events(t, "kernel", "_Z7vec_addPKfS0_Pfi"):
            e["name"] = "vec_add(float const *, float const *, float *, int)"
        for e in events(t, "kernel"):
            if e["name"].startswith("void xpusup_test::saxpy_tiled"):
                e["name"] = ("void xpusup_test::saxpy_tiled<float, (int)4>(float *, "
                             "const float *, xpusup_test::tile_params<float, (int)4>)")
        write(os.path.join(tmp, "names"), t, GOOD_STATS)
        rc, out = run(os.path.join(tmp, "names"))
        ok(rc == 0, "kernels named in other demangled spellings are recognized", out)

        # --min-stack-pct: half the vec_add stacks without their launcher
        t = copy.deepcopy(GOOD_TRACE)
        no_stack(t, None)
        write(os.path.join(tmp, "half"), t, GOOD_STATS)
        rc50, out50 = run(os.path.join(tmp, "half"), "--min-stack-pct", "50")
        rc100, out100 = run(os.path.join(tmp, "half"))
        ok(rc50 == 0 and rc100 == 1, "--min-stack-pct 50 accepts 1 of 2 stacks, the default "
           "does not", out50 + out100)

        # --strict-transfers: a copy's stack without its launcher
        t = copy.deepcopy(GOOD_TRACE)
        c = events(t, "memcpy", "memcpy DtoH")[0]
        c["args"]["stack"] = [f for f in c["args"]["stack"] if f != "download_result"]
        write(os.path.join(tmp, "xfer"), t, GOOD_STATS)
        rc0, out0 = run(os.path.join(tmp, "xfer"))
        rc1, out1 = run(os.path.join(tmp, "xfer"), "--strict-transfers")
        ok(rc0 == 0 and "note: copies and memsets: 4 of 5 stacks" in out0 and rc1 == 1 and
           any("launcher download_result" in line for line in mismatches(out1)),
           "a copy's missing launcher: a note by default, a mismatch with --strict-transfers",
           out0 + out1)

        # --json and --no-stats
        write(os.path.join(tmp, "nostats"), copy.deepcopy(GOOD_TRACE), None)
        rc, out = run(os.path.join(tmp, "nostats"))
        ok(rc == 111 and "stats.json" in out, "no stats.json: exit 111 naming it", out)
        report = os.path.join(tmp, "report.json")
        rc, out = run(os.path.join(tmp, "nostats"), "--no-stats", "--json", report)
        try:
            with open(report) as f:
                r = json.load(f)
        except (OSError, ValueError):
            r = {}
        ok(rc == 0 and r.get("mismatches") == [] and r.get("slices_by_cat", {}).get("kernel")
           == 6, "--no-stats passes without stats.json; --json writes the findings", out)

        # inputs that are not what they should be
        with open(os.path.join(tmp, "not_expect.json"), "w") as f:
            json.dump({"kernels": []}, f)
        rc, out = run(os.path.join(DATA, "good"), expect=os.path.join(tmp, "not_expect.json"))
        ok(rc == 100 and "not a cuda_workload --expect object" in out,
           "an expectation file of another kind: exit 100", out)
        os.makedirs(os.path.join(tmp, "cut"))
        with open(os.path.join(DATA, "good", "trace.json")) as f, \
                open(os.path.join(tmp, "cut", "trace.json"), "w") as g:
            g.write(f.read()[:3000])
        rc, out = run(os.path.join(tmp, "cut"))
        ok(rc == 111 and "unable to read" in out, "a cut trace.json: exit 111", out)

    print(f"1..{n}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
