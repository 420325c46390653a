"""A PyTorch CPU training loop in three named phases, for Python frames
(tests/python_torch_test.sh): train_step calls forward_phase, backward_phase and
optimizer_phase, each a Python function over libtorch.

Usage: torch_phases.py [--iterations N] [--torch-profiler JSON]

  plain                   trains N iterations (default 60) and prints "steps N"
  --torch-profiler JSON   the same loop under torch.profiler, each phase in a
                          record_function range; writes {phase: share of the three's total
                          CPU time} to JSON

One intra-op thread (torch.set_num_threads(1)): every phase runs on the main thread, so a
CPU sampler's shares and torch.profiler's range durations measure the same thing, CPU time
of the phase on that thread. Exit status: 0 done; 77 no PyTorch.
"""
import json
import sys


def forward_phase(model, loss_fn, x, y):
    return loss_fn(model(x), y)


def backward_phase(loss):
    loss.backward()


def optimizer_phase(opt):
    opt.step()
    opt.zero_grad()


def train_step(model, loss_fn, opt, x, y, ranges):
    with ranges("forward"):
        loss = forward_phase(model, loss_fn, x, y)
    with ranges("backward"):
        backward_phase(loss)
    with ranges("optimizer"):
        optimizer_phase(opt)


class NoRange:
    def __init__(self, name):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    args = sys.argv[1:]
    iterations = int(args[args.index("--iterations") + 1]) if "--iterations" in args else 60
    out = args[args.index("--torch-profiler") + 1] if "--torch-profiler" in args else None
    try:
        import torch
    except ImportError as e:
        print("torch_phases: no PyTorch:", e, file=sys.stderr)
        sys.exit(77)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    width = 512
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(256, width)
    y = torch.randint(0, 10, (256,))
    if out is None:
        for _ in range(iterations):
            train_step(model, loss_fn, opt, x, y, NoRange)
        print("steps", iterations)
        return
    from torch.autograd import profiler as ap
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(iterations):
            train_step(model, loss_fn, opt, x, y, ap.record_function)
    totals = {}
    for e in prof.key_averages():
        if e.key in ("forward", "backward", "optimizer"):
            totals[e.key] = e.cpu_time_total
    s = sum(totals.values()) or 1
    json.dump({k: v / s for k, v in totals.items()}, open(out, "w"))
    print("steps", iterations, totals)


if __name__ == "__main__":
    main()
