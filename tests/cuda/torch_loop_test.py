#!/usr/bin/python3
"""torch_loop.py where there is no GPU and usually no PyTorch: it compiles (py_compile),
--help needs no PyTorch, a wrong argument exits 100, and without PyTorch a run exits 77 with
one line saying so (with PyTorch, a 2-iteration run on whatever device there is writes its
JSON). Its reader of torch.profiler's Chrome trace takes both shapes, without PyTorch: the
object {"traceEvents": [...]} of torch 2.x and the bare list of torch 1.13 (Debian 12's
python3-torch), and counts the same from each. TAP on stdout.

Usage: torch_loop_test.py TORCH_LOOP.py"""
import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import tempfile

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


def run(*args):
    return subprocess.run([sys.executable, LOOP, *args], capture_output=True, text=True,
                          timeout=600)


LOOP = sys.argv[1] if len(sys.argv) == 2 else sys.exit(__doc__)
print("TAP version 13", flush=True)
try:
    py_compile.compile(LOOP, doraise=True)
    ok(True, "python3 -m py_compile torch_loop.py")
except py_compile.PyCompileError as e:
    ok(False, "python3 -m py_compile torch_loop.py", e)

# count_gpu_events on hand-made traces: one event of each counted category, one of another
# category and one that is not a complete event ("ph" "B"), as a list and as an object
spec = importlib.util.spec_from_file_location("torch_loop", LOOP)
loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loop)
events = [{"ph": "X", "cat": "kernel", "name": "gemm"}, {"ph": "X", "cat": "kernel", "name": "gemm"},
          {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD"},
          {"ph": "X", "cat": "gpu_memset", "name": "Memset"},
          {"ph": "X", "cat": "cpu_op", "name": "aten::mm"}, {"ph": "B", "cat": "kernel", "name": "x"}]
want = {"kernel": {"gemm": 2}, "gpu_memcpy": {"Memcpy HtoD": 1}, "gpu_memset": {"Memset": 1}}
with tempfile.TemporaryDirectory() as tmp:
    for shape, doc in (("torch 1.13's bare list", events),
                       ("torch 2.x's {\"traceEvents\": [...]}", {"traceEvents": events})):
        path = os.path.join(tmp, "trace.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        try:
            got = {k: dict(v) for k, v in loop.count_gpu_events(path).items()}
        except Exception as e:  # the test reports what broke rather than stopping
            got = repr(e)
        ok(got == want, f"count_gpu_events reads {shape}", got)
p = run("--help")
ok(p.returncode == 0 and "--torch-profiler" in p.stdout, "--help without PyTorch", p.stderr)
p = run("--iterations", "0")
ok(p.returncode == 100, "--iterations 0: exit 100", p.stderr)
p = run("--bogus")
ok(p.returncode == 100, "an unknown option: exit 100", p.stderr)
if importlib.util.find_spec("torch") is None:
    p = run()
    ok(p.returncode == 77 and p.stderr.startswith("torch_loop: no PyTorch:") and
       len(p.stderr.splitlines()) == 1, "no PyTorch: exit 77 and one line", p.stderr)
else:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "loop.json")
        p = run("--iterations", "2", "--warmup", "1", "--width", "64", "--batch", "8",
                "--torch-profiler", "--json", out)
        try:
            with open(out) as f:
                r = json.load(f)
        except (OSError, ValueError):
            r = {}
        ok(p.returncode == 0 and len(r.get("iter_ms", [])) == 2 and "kernel_count" in r,
           "with PyTorch: 2 iterations under torch.profiler, JSON written", p.stderr)
print(f"1..{n}")
sys.exit(1 if failed else 0)
