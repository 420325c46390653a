#!/usr/bin/env python3
"""A small PyTorch training loop with a fixed seed, for measuring what a profiler costs and
what it sees (scripts/gpu-check, docs/gpu.md). Runs on CUDA when it is there, else on the CPU.

Usage: torch_loop.py [--iterations N] [--warmup W] [--batch B] [--width H] [--no-nvtx]
                     [--torch-profiler] [--trace FILE] [--json FILE]

  plain             trains; prints the wall time of each iteration after the warm-up (the
                    GPU synchronized at the end of each) and their median and mean
  --torch-profiler  the same under torch.profiler (CPU and CUDA activities) from before the
                    model is made to the end, like `xpusup record`; adds the GPU kernels,
                    copies and memsets it saw, counted by name (from its Chrome trace
                    export, categories kernel, gpu_memcpy, gpu_memset)
  --trace FILE      with --torch-profiler: keep that Chrome trace
  --json FILE       writes the figures (and the counts) as one JSON object
  --no-nvtx         no NVTX range around each iteration (there is one by default, so that
                    `xpusup record` shows NVTX ranges from PyTorch)

The model: an MLP of 4 linear layers (WIDTH wide) with ReLU, cross-entropy loss, SGD with
momentum, on one fixed random batch. Exit status: 0 done; 77 no PyTorch; 100 usage.
"""
import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[2:]))
    p.add_argument("--iterations", type=int, default=50, help="timed iterations (50)")
    p.add_argument("--warmup", type=int, default=10, help="untimed iterations first (10)")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--no-nvtx", action="store_true")
    p.add_argument("--torch-profiler", action="store_true")
    p.add_argument("--trace")
    p.add_argument("--json")
    try:
        a = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 100)
    if a.iterations < 1 or a.warmup < 0 or a.batch < 1 or a.width < 1:
        print("torch_loop: --iterations >= 1, --warmup >= 0, --batch and --width >= 1",
              file=sys.stderr)
        sys.exit(100)
    return a


def count_gpu_events(trace_path):
    """Kernels, copies and memsets of a torch.profiler Chrome trace, by name."""
    with open(trace_path) as f:
        doc = json.load(f)
    counts = {"kernel": collections.Counter(), "gpu_memcpy": collections.Counter(),
              "gpu_memset": collections.Counter()}
    # torch 2.x writes {"traceEvents": [...]}, torch 1.13 (Debian 12's) the bare list
    for e in (doc.get("traceEvents", []) if isinstance(doc, dict) else doc):
        c = counts.get(e.get("cat"))
        if c is not None and e.get("ph") == "X":
            c[e.get("name", "?")] += 1
    return counts


def main():
    a = parse()
    try:
        import torch
    except ImportError as e:
        print(f"torch_loop: no PyTorch: {e}", file=sys.stderr)
        sys.exit(77)

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    nvtx = cuda and not a.no_nvtx

    def sync():
        if cuda:
            torch.cuda.synchronize()

    prof = None
    if a.torch_profiler:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if cuda:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()

    start = time.perf_counter()
    torch.manual_seed(0)
    layers = []
    width_in = a.width
    for i in range(4):
        width_out = 10 if i == 3 else a.width
        layers.append(torch.nn.Linear(width_in, width_out))
        if i < 3:
            layers.append(torch.nn.ReLU())
        width_in = width_out
    model = torch.nn.Sequential(*layers).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(a.batch, a.width, device=device)
    y = torch.randint(0, 10, (a.batch,), device=device)

    times_ms = []
    loss = None
    for it in range(a.warmup + a.iterations):
        t0 = time.perf_counter()
        if nvtx:
            torch.cuda.nvtx.range_push("iteration")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if nvtx:
            torch.cuda.nvtx.range_pop()
        sync()
        if it >= a.warmup:
            times_ms.append((time.perf_counter() - t0) * 1e3)
    final_loss = float(loss.item())
    total_s = time.perf_counter() - start

    out = {"mode": "torch-profiler" if prof else "plain", "device": str(device),
           "gpu": torch.cuda.get_device_name(0) if cuda else None,
           "torch": torch.__version__, "cuda": torch.version.cuda, "pid": os.getpid(),
           "iterations": a.iterations, "warmup": a.warmup, "batch": a.batch, "width": a.width,
           "nvtx": nvtx, "iter_ms": [round(t, 4) for t in times_ms],
           "median_ms": round(statistics.median(times_ms), 4),
           "mean_ms": round(statistics.mean(times_ms), 4),
           "total_s": round(total_s, 4), "final_loss": final_loss}
    if prof:
        prof.__exit__(None, None, None)
        keep = a.trace
        path = keep or tempfile.mkstemp(prefix="torch_loop.", suffix=".json")[1]
        prof.export_chrome_trace(path)
        counts = count_gpu_events(path)
        if not keep:
            os.unlink(path)
        out["kernels"] = dict(sorted(counts["kernel"].items()))
        out["kernel_count"] = sum(counts["kernel"].values())
        out["memcpy_count"] = sum(counts["gpu_memcpy"].values())
        out["memset_count"] = sum(counts["gpu_memset"].values())
        out["profiled_s"] = round(time.perf_counter() - start, 4)

    for i, t in enumerate(times_ms):
        print(f"iteration {a.warmup + i}: {t:.3f} ms")
    print(f"torch_loop: {out['mode']} on {out['gpu'] or device}: {a.iterations} iterations, "
          f"median {out['median_ms']:.3f} ms, mean {out['mean_ms']:.3f} ms, "
          f"total {total_s:.2f} s, loss {final_loss:.4f}")
    if prof:
        print(f"torch_loop: torch.profiler saw {out['kernel_count']} kernels "
              f"({len(out['kernels'])} names), {out['memcpy_count']} copies, "
              f"{out['memset_count']} memsets")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
