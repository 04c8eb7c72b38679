#!/usr/bin/env python3
"""What the probes cost inside one process (issue #19's full - shim): the
shim records throughout (GPUPROBE_RECORD=always), and the loader's duty
cycle attaches the launch probes in windows at random offsets and detaches
them between. Each step is labelled by the windows the loader logged: "on"
(wholly inside one), "off" (wholly outside all), "edge" otherwise. The
probes' cost is median(on) / median(off) - 1, a share of the step, with its
95% bootstrap interval over the steps.

Steps are not independent: a process's step time drifts by 10-30% over
seconds (on an H100, 2026-12-06), so that interval is too narrow, and
processes disagree by more than it. The cost to judge a goal by is the
second, by window: each window's median(on) against the mean of the
medians of the gaps either side of it (the steps wholly between it and
the windows before and after; a window without steps on all three is left
out), the mean of those over the windows, with its 95% bootstrap interval
over the windows (each window, with its gaps, is one unit). --pool gives
it over the windows of several processes together (SKIP 20); --runs
over a script's runs 1..N (PREFIX-r.txt files; runs without steps left
out, nothing said for fewer than two).

  probe_windows.py LOADER_LOG STEP_TIMES [SKIP [PER]]
  probe_windows.py --pool LOADER_LOG STEP_TIMES [LOADER_LOG STEP_TIMES ...]
  probe_windows.py --runs NAME EDGES_PREFIX STEPS_PREFIX N
STEP_TIMES: train.py's STEP_TIMES or BIG_STEP_TIMES file, or empty_launch's
BATCH_TIMES (a "step" is then a batch of launches); steps before SKIP
(default 20) are not judged (warm-up). PER (launches a step): the cost is
also given per launch, median(on) - median(off) over PER, in ns, with its
95% bootstrap interval (#19's full - shim on (a)).
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratio import difference, interval, mean_interval  # noqa: E402
from window_counts import windows  # noqa: E402


def label(win, s, e):
    """on (wholly inside one window), off (wholly outside all), or edge."""
    if any(o <= s and e < c for o, c in win):
        return "on"
    if all(e < o or s >= c for o, c in win):
        return "off"
    return "edge"


def bracketed(win, steps):
    """Per window with steps inside it and in the gaps either side: (its
    median step, the mean of the gaps' medians), in ms."""
    out = []
    for k, (o, c) in enumerate(win):
        lo = win[k - 1][1] if k else -1
        hi = win[k + 1][0] if k + 1 < len(win) else 1 << 63
        on = [(e - s) / 1e6 for s, e in steps if o <= s and e < c]
        before = [(e - s) / 1e6 for s, e in steps if lo <= s and e < o]
        after = [(e - s) / 1e6 for s, e in steps if c <= s and e < hi]
        if on and before and after:
            out.append((statistics.median(on), (statistics.median(before) + statistics.median(after)) / 2))
    return out


def window_cost(got):
    """bracketed()'s windows: the mean of their costs, a share of the step,
    and its 95% bootstrap interval over the windows."""
    return mean_interval([on / off - 1 for on, off in got])


def by_window(win, steps, per):
    """The lines of the cost by window (module docstring)."""
    got = bracketed(win, steps)
    if not got:
        return ["by window: no window has steps inside and on both sides"]
    m, lo, hi = window_cost(got)
    lines = ["by window (each against the gaps either side): %+.2f%% [%+.2f%%, %+.2f%%] of the step "
             "(mean of %d windows, 95%% over them)" % (100 * m, 100 * lo, 100 * hi, len(got))]
    if per:
        m, lo, hi = mean_interval([(on - off) * 1e6 / per for on, off in got])
        lines.append("per launch by window: %+.0f ns [%+.0f, %+.0f] (%d launches a step)" % (m, lo, hi, per))
    return lines


def read_steps(path, skip):
    """(start, end) ns of each step from SKIP on."""
    out = []
    for line in open(path):
        i, s, e = map(int, line.split())
        if i >= skip:
            out.append((s, e))
    return out


def pool(args, name="by window, pooled"):
    """--pool: the cost by window over every process's windows."""
    if not args or len(args) % 2:
        sys.exit("probe_windows.py --pool: LOADER_LOG STEP_TIMES pairs, one for each process")
    got = []
    for log, times in zip(args[::2], args[1::2]):
        got += bracketed(windows(log), read_steps(times, 20))
    if not got:
        print("%s: no window has steps inside and on both sides" % name)
        return
    m, lo, hi = window_cost(got)
    print("%s over %d processes: %+.2f%% [%+.2f%%, %+.2f%%] of the step (mean of %d windows)" %
          (name, len(args) // 2, 100 * m, 100 * lo, 100 * hi, len(got)))


def runs(name, edges, steps, n):
    """--runs: --pool over a script's runs 1..n (EDGES-r.txt, STEPS-r.txt),
    those whose step file has steps; nothing with fewer than two."""
    args = []
    for r in range(1, int(n) + 1):
        path = "%s-%d.txt" % (steps, r)
        if os.path.exists(path) and os.path.getsize(path):
            args += ["%s-%d.txt" % (edges, r), path]
    if len(args) > 2:
        pool(args, name + ": by window, pooled")


def main():
    if sys.argv[1] == "--pool":
        pool(sys.argv[2:])
        return
    if sys.argv[1] == "--runs":
        runs(*sys.argv[2:6])
        return
    win = windows(sys.argv[1])
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    by = {"on": [], "off": [], "edge": []}
    steps = read_steps(sys.argv[2], skip)
    for s, e in steps:
        by[label(win, s, e)].append((e - s) / 1e6)
    for kind, xs in by.items():
        if xs:
            print("%s: %d steps, median %.3f ms" % (kind, len(xs), statistics.median(xs)))
    if by["on"] and by["off"]:
        r, lo, hi = interval(by["on"], by["off"])
        print("probes (on / off - 1): %+.2f%% [%+.2f%%, %+.2f%%] of the step (%d windows)" %
              (100 * (r - 1), 100 * (lo - 1), 100 * (hi - 1), len(win)))
        if per:
            d, lo, hi = difference(by["on"], by["off"])
            print("probes per launch: %+.0f ns [%+.0f, %+.0f] (%d launches a step)" %
                  (d * 1e6 / per, lo * 1e6 / per, hi * 1e6 / per, per))
        print("\n".join(by_window(win, steps, per)))


if __name__ == "__main__":
    main()
