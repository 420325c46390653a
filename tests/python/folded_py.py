# Reads the Python frames in a flame.folded (tests/python_test.sh). A Python frame is
# "[py] QUALNAME (FILE)" (docs/sinks.md); every other frame is native.
#
#   folded_py.py order FOLDED F1 F2 ... FN   the share of FN's weight whose Python frames
#                                            end with F1;...;FN, in that order, nothing
#                                            between them: at least 0.95, else exit 1
#   folded_py.py split FOLDED PARENT A:SHARE B:SHARE ...
#                                            the share of PARENT's weight under each
#                                            function within 0.05 of its SHARE, else exit 1
#   folded_py.py below FOLDED F MIN          the share of F's weight with a native frame
#                                            below F (innermost side): at least MIN
#   folded_py.py has FOLDED F [NOT]          some weight under F (and none of it under NOT)
import sys

PY = "[py] "


def qual(frame):
    return frame[len(PY):].rsplit(" (", 1)[0] if frame.startswith(PY) else None


def lines(path):
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        if stack and w.isdigit():
            yield stack.split(";"), int(w)


def weight_under(path, f):
    return sum(w for fr, w in lines(path) if any(qual(x) == f for x in fr))


def order(path, chain):
    total = good = 0
    for fr, w in lines(path):
        py = [qual(x) for x in fr if x.startswith(PY)]
        if chain[-1] not in py:
            continue
        total += w
        i = len(py) - 1 - py[::-1].index(chain[-1])
        if py[max(0, i - len(chain) + 1):i + 1] == chain:
            good += w
    share = good / total if total else 0
    print("order %s: %.3f of %d" % (";".join(chain), share, total))
    return share >= 0.95


def split(path, parent, wants):
    total = weight_under(path, parent)
    ok = total > 0
    for spec in wants:
        f, want = spec.rsplit(":", 1)
        got = weight_under(path, f) / total if total else 0
        print("%s: %.3f of %s (want %s)" % (f, got, parent, want))
        ok = ok and abs(got - float(want)) <= 0.05
    return ok


def below(path, f, least):
    total = native = 0
    for fr, w in lines(path):
        idx = [i for i, x in enumerate(fr) if qual(x) == f]
        if not idx:
            continue
        total += w
        rest = fr[idx[-1] + 1:]
        if rest and not rest[0].startswith(PY):
            native += w
    share = native / total if total else 0
    print("native below %s: %.3f of %d" % (f, share, total))
    return share >= least


def has(path, f, without=None):
    w = weight_under(path, f)
    bad = 0
    if without:
        bad = sum(w for fr, w in lines(path)
                  if any(qual(x) == f for x in fr) and any(qual(x) == without for x in fr))
    print("%s: %d%s" % (f, w, " (%d also under %s)" % (bad, without) if without else ""))
    return w > 0 and bad == 0


def main(argv):
    cmd, path = argv[1], argv[2]
    if cmd == "order":
        return order(path, argv[3:])
    if cmd == "split":
        return split(path, argv[3], argv[4:])
    if cmd == "below":
        return below(path, argv[3], float(argv[4]))
    if cmd == "has":
        return has(path, argv[3], argv[4] if len(argv) > 4 else None)
    raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv) else 1)
