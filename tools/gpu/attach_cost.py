#!/usr/bin/env python3
"""What an attached loader costs a process on average, inside that process
(tools/gpu/attach_cost.sh): its steps labelled by the loader's phases,
"attached" (wholly between an attach and the next detach) or "detached"
(wholly between a detach and the next attach, or before the first attach
from the 50th step on), steps beginning within EDGE seconds after an attach
or a detach left out. Each attached phase is judged against the two
detached phases around it: mean(attached) / mean of their means - 1, so a
process's steady drift cancels. The cost is the mean of the cycles' costs,
with a 95% bootstrap interval over the cycles.

  attach_cost.py PHASES STEP_TIMES [EDGE [WINDOWS]]
PHASES: "attach NS" and "detach NS" lines (CLOCK_MONOTONIC); STEP_TIMES:
train.py's "step start_ns end_ns" lines; WINDOWS: the loaders' -v lines
with the duty windows' edges: the cost is then given again for the
attached steps wholly outside every window (being attached, not recording).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratio import mean_interval  # noqa: E402
from window_counts import windows  # noqa: E402


def phases(path):
    """The attach and detach times (CLOCK_MONOTONIC ns) from PHASES, in pairs."""
    marks = [line.split() for line in open(path) if line.strip()]
    att = [int(t) for k, t in marks if k == "attach"]
    det = [int(t) for k, t in marks if k == "detach"]
    return list(zip(att, det))


def spans(cycles, edge_ns):
    """The phases in time order, each (kind, begin, end): detached, attached, detached, ..."""
    out, begin = [], 0
    for a, d in cycles:
        out.append(("detached", begin, a))
        out.append(("attached", a + edge_ns, d))
        begin = d + edge_ns
    out.append(("detached", begin, None))
    return out


def mean(xs):
    return sum(xs) / len(xs)


def costs(cycles, steps, edge_ns, skip=50, win=()):
    """Per cycle: (attached steps, detached before, detached after), in ms;
    attached steps that overlap a window of win left out."""
    sp = spans(cycles, edge_ns)
    by = [[] for _ in sp]
    for i, s, e in steps:
        if i < skip or any(s < c and e >= o for o, c in win):
            continue
        for k, (_, b, end) in enumerate(sp):
            if b <= s and (end is None or e < end):
                by[k].append((e - s) / 1e6)
                break
    return [(by[k], by[k - 1], by[k + 1]) for k in range(1, len(sp) - 1, 2)
            if by[k] and by[k - 1] and by[k + 1]]


def where(cycles, steps, edge_ns, win, arm_ns, skip=50):
    """Splits each cycle's extra time (attached step - the detached phases'
    mean) by where the step lies: wholly inside a window, at an edge
    (overlapping a window's opening or closing, or the ARM seconds before it
    opens and after it closes, when the shims switch CUPTI on and off), or
    between windows. Per class: steps,
    and extra ms as a share of the attached phase's time, mean over cycles."""
    sp = spans(cycles, edge_ns)
    by = [[] for _ in sp]
    for i, s, e in steps:
        if i < skip:
            continue
        for k, (_, b, end) in enumerate(sp):
            if b <= s and (end is None or e < end):
                by[k].append((s, e))
                break
    shares = {"window": [], "edge": [], "between": []}
    counts = {c: 0 for c in shares}
    for k in range(1, len(sp) - 1, 2):
        if not (by[k] and by[k - 1] and by[k + 1]):
            continue
        dur = lambda ss: [(e - s) / 1e6 for s, e in ss]  # noqa: E731
        base = (mean(dur(by[k - 1])) + mean(dur(by[k + 1]))) / 2
        extra = {c: 0.0 for c in shares}
        for s, e in by[k]:
            if any(o <= s and e <= c for o, c in win):
                c = "window"
            elif any(s < c + arm_ns and e >= o - arm_ns for o, c in win):
                c = "edge"
            else:
                c = "between"
            extra[c] += (e - s) / 1e6 - base
            counts[c] += 1
        for c in shares:
            shares[c].append(extra[c] / (base * len(by[k])))
    if not shares["window"]:
        return
    print("where the attached cost goes (extra time / attached time, mean over %d cycles; arm %.1f s): %s" % (
        len(shares["window"]), arm_ns / 1e9, ", ".join(
            "%s %+.2f%% (%d steps)" % (c, 100 * mean(v), counts[c]) for c, v in shares.items())))


def cost(on, before, after):
    return mean(on) / ((mean(before) + mean(after)) / 2) - 1


def report(title, got):
    if not got:
        print("%s: no cycle has steps attached and detached on both sides" % title)
        return
    for i, (on, before, after) in enumerate(got, 1):
        print("cycle %d: attached %d steps mean %.3f ms, detached before %d mean %.3f, after %d mean %.3f: %+.2f%%" % (
            i, len(on), mean(on), len(before), mean(before), len(after), mean(after),
            100 * cost(on, before, after)))
    each = [cost(*g) for g in got]
    m, lo, hi = mean_interval(each)
    print("%s: %+.2f%% [%+.2f, %+.2f] (95%%, %d cycles)" % (title, 100 * m, 100 * lo, 100 * hi, len(each)))


def main():
    cycles = phases(sys.argv[1])
    edge_ns = int(float(sys.argv[3]) * 1e9) if len(sys.argv) > 3 else 2 * 10**9
    steps = [tuple(map(int, line.split()[:3])) for line in open(sys.argv[2]) if line.strip()]
    got = costs(cycles, steps, edge_ns)
    if not got:
        sys.exit("attach_cost: no cycle has steps attached and detached on both sides")
    report("attached / detached - 1", got)
    win = windows(sys.argv[4]) if len(sys.argv) > 4 else []
    if win:
        report("attached between windows / detached - 1", costs(cycles, steps, edge_ns, win=win))
        where(cycles, steps, edge_ns, win, int(float(os.environ.get("ARM", "0.2")) * 1e9))


if __name__ == "__main__":
    main()
