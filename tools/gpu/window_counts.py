#!/usr/bin/env python3
"""Kernel counts of the steps wholly inside duty-cycle windows against
torch.profiler's (issue #23): every step that began and ended (its
synchronize included) inside one window must have launched, per kernel
name, what a steady step launches under torch.profiler.

  window_counts.py TRACE LOADER_LOG STEP_TIMES TORCH_A TORCH_B STEPS_A STEPS_B [SKIP]

TRACE: the run's --trace timeline; LOADER_LOG: its -v log (the windows'
edges); STEP_TIMES: train.py's STEP_TIMES file; TORCH_A/B: train.py's
TORCH_PROFILE JSON of STEPS_A and STEPS_B steps (a steady step's launches
are their difference over STEPS_B - STEPS_A, warm-up cancelled). Steps
before SKIP (default 5) are not judged. Only steps that end before the
trace's last kept launch (every thread's, when the trace hit its bound) count. Copies and memsets are left out, as
tools/completeness.py does. Exit 0 when every judged step matches.
"""
import json
import re
import sys
from collections import Counter, defaultdict


def windows(log):
    edges, opened = [], None
    for line in open(log, errors="replace"):
        m = re.search(r"duty: window (open|closed) at (\d+)", line)
        if m and m.group(1) == "open":
            opened = int(m.group(2))
        elif m and opened is not None:
            edges.append((opened, int(m.group(2))))
            opened = None
        m = re.search(r"stopping at (\d+)", line)
        if m and opened is not None:
            edges.append((opened, int(m.group(1))))
            opened = None
    return edges


def steady_step(a, b, sa, sb):
    ta, tb = json.load(open(a)), json.load(open(b))
    per = {}
    for k in set(ta) | set(tb):
        if k.startswith(("Memcpy", "Memset")):
            continue
        d = tb.get(k, [0, 0])[0] - ta.get(k, [0, 0])[0]
        if d % (sb - sa):
            print("torch.profiler: %s: %d launches over %d steps, not a whole number a step" % (k, d, sb - sa))
        if d:
            per[k] = d / (sb - sa)
    return per


def main():
    trace, log, steps_path, ta, tb, sa, sb = sys.argv[1:8]
    skip = int(sys.argv[8]) if len(sys.argv) > 8 else 5
    doc = json.load(open(trace))
    base = doc["otherData"]["base_ns"]
    ev = doc["traceEvents"]
    act = {}
    for e in ev:
        if e["ph"] == "X" and e["cat"] == "gpu":
            act.setdefault((e["pid"] & 0x3fffffff, e["args"]["correlation"]), []).append(e["name"])
    calls, thread_last = [], {}
    for e in ev:
        if e["ph"] == "X" and e["cat"] == "launch":
            t = base + round(e["ts"] * 1000)
            calls.append((t, e["pid"], e["args"]["correlation"]))
            thread_last[(e["pid"], e["tid"])] = max(t, thread_last.get((e["pid"], e["tid"]), 0))
    # Calls are kept in the order the join paired them, thread by thread: past
    # the bound, a step is whole in the trace only before every thread's last.
    last = max(thread_last.values())
    if doc["otherData"]["launches_not_kept"]:
        last = min(thread_last.values())
    win = windows(log)
    per = steady_step(ta, tb, int(sa), int(sb))
    judged = bad = 0
    total = Counter()
    by_step = defaultdict(Counter)
    steps = [tuple(map(int, l.split())) for l in open(steps_path)]
    inside = [(i, s, e) for i, s, e in steps
              if i >= skip and e < last and any(o <= s and e < c for o, c in win)]
    starts = sorted(s for _, s, _ in inside)
    for t, pid, corr in calls:
        for i, s, e in inside:
            if s <= t <= e:
                for name in act.get((pid, corr), []):
                    if not name.startswith("["):
                        by_step[i][name] += 1
                break
    for i, s, e in inside:
        judged += 1
        want = Counter({k: round(v) for k, v in per.items()})
        if by_step[i] != want:
            bad += 1
            if bad <= 3:
                diff = {k: (by_step[i][k], want[k]) for k in set(by_step[i]) | set(want) if by_step[i][k] != want[k]}
                print("step %d differs (ours, torch.profiler's): %r" % (i, dict(list(diff.items())[:8])))
        total.update(by_step[i])
    print("window_counts: %d windows, %d steps wholly inside one (of %d), %d differ from torch.profiler's "
          "steady step (%d kernel names, %d launches a step); %d launches judged" %
          (len(win), judged, len(steps), bad, len(per), round(sum(per.values())), sum(total.values())))
    sys.exit(1 if bad or not judged else 0)


if __name__ == "__main__":
    main()
