#!/usr/bin/python3
"""The pprof sink's files as the real pprof tool reads them, against flame.folded of the same
session (tests/pprof_test.sh). Prints one line per check, "ok WHAT" or "not ok WHAT: why".

Usage: pprof_compare.py PPROF FLAME_FOLDED PROFILE.pb.gz...

flame.folded (weight ns) is "comm;root;...;leaf WEIGHT": CPU samples weigh their period,
GPU work its duration under its launch stack with a "[gpu] ..." leaf. The pprof files hold
the same events in the sample types cpu and gpu_time, the comm a label rather than a frame,
kernel frames without folded's "_[k]". Compared:
  - `pprof -top` per sample type: the same top functions by flat time, in the same order,
    and each function's flat share within 1 percentage point;
  - `pprof -traces` per sample type: the same stacks (root first, comm dropped), each
    stack's share within 1 point; for GPU time this is each kernel under its launch stack;
  - every trace carries the host and configured labels.
"""
import collections
import re
import subprocess
import sys

TOP_N = 8
POINTS = 1.0


def folded(path):
    """(cpu, gpu): Counter of root-first stack tuples (comm dropped) -> weight."""
    cpu, gpu = collections.Counter(), collections.Counter()
    for line in open(path, encoding='utf-8', errors='surrogateescape'):
        stack, w = line.rstrip('\n').rsplit(' ', 1)
        frames = tuple(f[:-4] if f.endswith('_[k]') else f for f in stack.split(';')[1:])
        (gpu if frames and frames[-1].startswith('[gpu] ') else cpu)[frames] += int(w)
    return cpu, gpu


def run(pprof, args):
    out = subprocess.run([pprof] + args, capture_output=True, text=True, timeout=60)
    if out.returncode:
        raise SystemExit(f'not ok pprof {" ".join(args[:3])}: exit {out.returncode}: '
                         f'{out.stderr[-500:]}')
    return out.stdout


def top(pprof, index, files):
    """function -> flat ns, from `pprof -top`."""
    text = run(pprof, ['-top', '-unit=ns', '-nodecount=100000', '-nodefraction=0',
                       '-edgefraction=0', f'-sample_index={index}'] + files)
    flat = {}
    for line in text.splitlines():
        m = re.match(r'\s*(\d+)(?:ns)?\s+\S+%\s+\S+%\s+\d+(?:ns)?\s+\S+%\s+(.*)$', line)
        if m:
            flat[m.group(2)] = int(m.group(1))
    return flat


def traces(pprof, index, files):
    """(Counter of root-first stacks -> value, list of each trace's labels)."""
    text = run(pprof, ['-traces', '-unit=ns', f'-sample_index={index}'] + files)
    stacks, labels = collections.Counter(), []
    for block in text.split('-----------+-------------------------------------------------------')[1:]:
        lab, frames, value = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            m = re.match(r'\s*([A-Za-z_][A-Za-z0-9_]*):\s+(.*)$', line)
            if value is None and m:
                lab[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r'\s*(\d+)(?:ns)?\s{3}(.*)$', line)
            if value is None and m:
                value = int(m.group(1))
                frames.append(m.group(2))
            elif value is not None:
                frames.append(line.strip())
        if value:
            stacks[tuple(reversed(frames))] += value
            labels.append(lab)
    return stacks, labels


def shares(counter):
    total = sum(counter.values())
    return {k: 100.0 * v / total for k, v in counter.items()} if total else {}


def flat_of(stacks):
    flat = collections.Counter()
    for frames, w in stacks.items():
        if frames:
            flat[frames[-1]] += w
    return flat


def ranked(flat):
    return [name for name, _ in sorted(flat.items(), key=lambda kv: (-kv[1], kv[0]))]


def compare(what, want, got):
    """want, got: Counter key -> weight. Same keys, shares within POINTS."""
    ws, gs = shares(want), shares(got)
    missing, extra = set(ws) - set(gs), set(gs) - set(ws)
    worst = max((abs(ws[k] - gs[k]) for k in ws if k in gs), default=0.0)
    if missing or extra or worst > POINTS:
        print(f'not ok {what}: missing {sorted(missing)[:3]}, extra {sorted(extra)[:3]}, '
              f'worst share difference {worst:.3f} points')
        return False
    print(f'ok {what} ({len(ws)} entries, worst share difference {worst:.4f} points)')
    return True


def main():
    pprof, flame, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    cpu, gpu = folded(flame)
    ok = True
    for index, want in (('cpu', cpu), ('gpu_time', gpu)):
        if not want:
            print(f'not ok {index}: flame.folded has no such stacks')
            ok = False
            continue
        want_flat = flat_of(want)
        got_flat = {k: v for k, v in top(pprof, index, files).items() if v}
        top_want, top_got = ranked(want_flat)[:TOP_N], ranked(got_flat)[:TOP_N]
        if top_want != top_got:
            print(f'not ok {index}: pprof -top ranks {top_got}, flame.folded {top_want}')
            ok = False
        else:
            print(f'ok {index}: pprof -top has the top functions of flame.folded in its '
                  f'order: {", ".join(top_got[:4])}, ...')
        ok = compare(f'{index}: pprof -top flat shares against flame.folded leaves',
                     want_flat, collections.Counter(got_flat)) and ok
        got, labels = traces(pprof, index, files)
        ok = compare(f'{index}: pprof -traces stacks against flame.folded stacks', want,
                     got) and ok
        bad = [l for l in labels if l.get('team') != 'ml' or l.get('job') != 'resnet'
               or l.get('host') != 'testhost' or 'pid' not in l or 'comm' not in l]
        if bad or not labels:
            print(f'not ok {index}: traces without the labels: {bad[:2]}')
            ok = False
        else:
            print(f'ok {index}: every trace has pid, comm, host and the configured labels')
        if index == 'gpu_time':
            kernels = [l for l in labels if 'kernel' in l]
            if not kernels or any('device' not in l or 'stream' not in l for l in kernels):
                print('not ok gpu_time: kernel traces without device, stream, kernel labels')
                ok = False
            else:
                print(f'ok gpu_time: kernel traces carry kernel, device and stream '
                      f'({len(kernels)} traces)')
            under = {}
            for frames in got:
                if frames and frames[-1].startswith('[gpu] ') and 'memcpy' not in frames[-1] \
                        and 'memset' not in frames[-1]:
                    under.setdefault(frames[-1], set()).add(frames[:-1])
            want_under = {}
            for frames in want:
                if frames[-1] in under or frames[-1].endswith('_kernel'):
                    want_under.setdefault(frames[-1], set()).add(frames[:-1])
            if under != want_under or not under:
                print(f'not ok gpu_time: kernels under other stacks than in flame.folded')
                ok = False
            else:
                print(f'ok gpu_time: each kernel leaf under the launch stacks flame.folded has '
                      f'({", ".join(sorted(under))})')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
