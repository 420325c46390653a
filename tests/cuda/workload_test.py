#!/usr/bin/python3
"""The CUDA test workload (workload.cu) on a machine without a GPU. TAP on stdout.

Usage: workload_test.py build   WORKLOAD
       workload_test.py expect  WORKLOAD TESTDATA_EXPECT.json
       workload_test.py names   WORKLOAD WORKLOAD.ptx
       workload_test.py no-gpu  WORKLOAD

build    the binary holds device code for sm_90 (H100), host code with frame
         pointers (each launcher starts `push %rbp; mov %rsp,%rbp`), line info, cudart
         linked statically (no libcudart.so needed)
expect   `--expect` is one JSON object with every key check_trace.py reads, the same keys as
         the hand-written testdata/expect.json that check_trace.py is tested on, and
         consistent totals; it runs without touching CUDA (no GPU here)
names    every kernel is a .entry of the PTX nvcc makes from the same source under the
         mangled name --expect gives, and no .entry is left out; c++filt turns each mangled
         name into the demangled one given; every launcher is a global function of the binary
no-gpu   without a GPU a plain run exits 77 with one line on stderr, `cuda_workload: no
         GPU: ...`, and nothing on stdout (skipped, exit 77, where there is a GPU)
"""
import json
import os
import re
import subprocess
import sys

n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {what}", flush=True)
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[-20:]:
            print(f"#   {line}")


def tool(*cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        sys.exit(f"workload_test: unable to run {cmd[0]}: not installed (binutils)")
    return p.returncode, p.stdout, p.stderr


def expect_of(workload):
    rc, out, err = tool(workload, "--expect")
    try:
        return rc, json.loads(out), out + err
    except ValueError as e:
        return rc, None, f"{e}\n{out}{err}"


def test_build(workload):
    rc, out, err = tool("objdump", "-h", workload)
    sections = re.findall(r"^\s*\d+\s+(\S+)", out, re.M)
    ok(rc == 0 and ".nv_fatbin" in sections, "the binary has device code (.nv_fatbin)",
       out + err)
    fatbin = workload + ".nv_fatbin"
    rc, out, err = tool("objcopy", "-O", "binary", "--only-section=.nv_fatbin", workload, fatbin)
    try:
        with open(fatbin, "rb") as f:
            blob = f.read()
        os.unlink(fatbin)
    except OSError:
        blob = b""
    # a cubin: an ELF with e_machine EM_CUDA (190), for sm_90
    cubins = [i for i in range(len(blob)) if blob.startswith(b"\x7fELF", i) and
              int.from_bytes(blob[i + 18:i + 20], "little") == 190]
    ok(cubins and b"sm_90" in blob, f"device code for sm_90 (H100): {len(cubins)} cubins",
       out + err)
    rc, out, err = tool("objdump", "-d", "--no-show-raw-insn", workload)
    starts = {}
    # each launcher up to its first call: push %rbp first, mov %rsp,%rbp before the call
    for m in re.finditer(r"^[0-9a-f]+ <(launch_\w+|copy_\w+|upload_\w+|download_\w+|"
                         r"clear_\w+)>:\n((?:(?!.*\bcall\b).*\n)*)", out, re.M):
        starts[m.group(1)] = m.group(2)
    framed = [f for f, body in starts.items()
              if re.match(r"\s*[0-9a-f]+:\s+push\s+%rbp", body) and
              re.search(r"mov\s+%rsp,%rbp", body)]
    ok(len(starts) >= 10 and len(framed) == len(starts),
       f"launchers keep a frame pointer ({len(framed)} of {len(starts)})",
       "\n".join(f"{k}: {v}" for k, v in starts.items() if k not in framed))
    rc, out, err = tool("objdump", "-h", workload)
    ok(".debug_line" in out, "host line info (.debug_line)")
    rc, out, err = tool("ldd", workload)
    ok("libcudart" not in out, "cudart linked statically", out)


def test_expect(workload, testdata):
    rc, e, detail = expect_of(workload)
    ok(rc == 0 and isinstance(e, dict), "--expect exits 0 with a JSON object", detail)
    if not isinstance(e, dict):
        return
    with open(testdata) as f:
        t = json.load(f)
    ok(set(e) == set(t), "the same top-level keys as testdata/expect.json",
       f"{sorted(e)} vs {sorted(t)}")
    for key in ("kernels", "transfers", "ranges"):
        ok(all(set(x) == set(t[key][0]) for x in e[key]) and e[key],
           f"{key}: every entry has the keys of testdata/expect.json's", e[key])
    for key in ("graph", "memset"):
        ok(set(e[key]) == set(t[key]), f"{key}: the keys of testdata/expect.json's")
    ok(set(e["memcpy"]) == {"HtoD", "DtoH"} and
       all(set(v) == {"count", "bytes", "sizes"} for v in e["memcpy"].values()),
       "memcpy: HtoD and DtoH with count, bytes, sizes")
    ok(e["xpusup_cuda_workload"] == 1 and e["exit_no_gpu"] == 77, "version 1, exit_no_gpu 77")

    ks = e["kernels"]
    names = [k["name"] for k in ks]
    ok(len(set(names)) == len(names) and len({k["mangled"] for k in ks}) == len(ks),
       "kernel names and mangled names are unique")
    ok(e["kernel_count"] == sum(k["count"] for k in ks) == 200,
       "kernel_count is the sum of the kernels' counts (200)")
    ok([k["count"] for k in ks if not k["graph"]] == [100, 50, 20],
       "100 vec_add, 50 scale, 20 saxpy_tiled launches", ks)
    g = e["graph"]
    graph_ks = [k for k in ks if k["graph"]]
    ok(g["kernels_per_launch"] == len(graph_ks) == g["captured_launch_calls"] == 3 and
       g["kernel_count"] == g["launches"] * 3 == sum(k["count"] for k in graph_ks) and
       all(k["count"] == g["launches"] for k in graph_ks),
       "graph: 3 nodes, each run once per launch", g)
    ok(e["kernel_launch_calls"] == sum(k["count"] for k in ks if not k["graph"]) +
       g["captured_launch_calls"], "kernel_launch_calls: direct launches plus the captured ones")
    ok(len({k["launcher"] for k in ks}) == len(ks) and g["launcher"] not in
       {k["launcher"] for k in ks}, "every kernel has a launcher of its own")

    for kind, want in list(e["memcpy"].items()) + [("memset", e["memset"])]:
        rows = [x for x in e["transfers"] if x["kind"] == kind]
        sizes = {}
        for x in rows:
            sizes[str(x["bytes"])] = sizes.get(str(x["bytes"]), 0) + x["count"]
        ok(want["count"] == sum(x["count"] for x in rows) == sum(want["sizes"].values()) and
           want["bytes"] == sum(x["count"] * x["bytes"] for x in rows) ==
           sum(int(b) * c for b, c in want["sizes"].items()) and sizes == want["sizes"],
           f"{kind}: totals agree with the transfers", (want, rows))

    ranges = e["ranges"]
    seen = set()
    tree = True
    for x in ranges:
        tree &= x["parent"] is None or x["parent"] in seen
        seen.add(x["name"])
    ok(tree and sum(x["parent"] is None for x in ranges) == 1 and len(seen) == len(ranges),
       "ranges form one tree, parents first", ranges)
    it = [x for x in ranges if x["name"] == "iteration"]
    ok(it and it[0]["count"] == e["iterations"], "one iteration range per iteration")


def test_names(workload, ptx):
    rc, e, detail = expect_of(workload)
    if not isinstance(e, dict):
        ok(False, "--expect", detail)
        return
    with open(ptx) as f:
        entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", f.read()))
    mangled = {k["mangled"] for k in e["kernels"]}
    ok(mangled <= entries, "every mangled name is a .entry of the PTX",
       f"missing: {sorted(mangled - entries)}; entries: {sorted(entries)}")
    ok(entries <= mangled, "every .entry of the PTX is in the expectations",
       f"unlisted: {sorted(entries - mangled)}")
    rc, out, err = tool("c++filt", *[k["mangled"] for k in e["kernels"]])
    got = out.splitlines()
    for k, d in zip(e["kernels"], got):
        ok(d == k["demangled"], f"c++filt {k['mangled']} is {k['demangled']!r}", d)
    rc, out, err = tool("nm", "--defined-only", workload)
    text = {m.group(1) for m in re.finditer(r"^[0-9a-f]+ T (\S+)$", out, re.M)}
    launchers = {k["launcher"] for k in e["kernels"]} | {x["launcher"] for x in e["transfers"]}
    launchers.add(e["graph"]["launcher"])
    ok(launchers <= text, f"the {len(launchers)} launchers are global functions (nm T)",
       f"missing: {sorted(launchers - text)}")


def gpu_here():
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version")


def test_no_gpu(workload):
    if gpu_here():
        print("1..0 # SKIP this machine has an NVIDIA driver: the no-GPU path is not taken")
        sys.exit(77)
    p = subprocess.run([workload], capture_output=True, text=True, timeout=60)
    lines = p.stderr.splitlines()
    ok(p.returncode == 77, f"exit status 77 (got {p.returncode})", p.stderr)
    ok(len(lines) == 1 and lines[0].startswith("cuda_workload: no GPU: "),
       "one line on stderr: cuda_workload: no GPU: ...", p.stderr)
    ok(p.stdout == "", "nothing on stdout", p.stdout)
    p = subprocess.run([workload, "--bogus"], capture_output=True, text=True, timeout=60)
    ok(p.returncode == 100 and "usage" in p.stderr, "a wrong argument: exit 100 and usage",
       p.stderr)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, workload = sys.argv[1], sys.argv[2]
    print("TAP version 13", flush=True)
    if mode == "build":
        test_build(workload)
    elif mode == "expect" and len(sys.argv) == 4:
        test_expect(workload, sys.argv[3])
    elif mode == "names" and len(sys.argv) == 4:
        test_names(workload, sys.argv[3])
    elif mode == "no-gpu":
        test_no_gpu(workload)
    else:
        sys.exit(__doc__)
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
