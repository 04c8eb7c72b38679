#!/usr/bin/env python3
"""What the probes cost inside one process (issue #19's full - shim): the
shim records throughout (GPUPROBE_RECORD=always), and the loader's duty
cycle attaches the launch probes in windows at random offsets and detaches
them between. Each step is labelled by the windows the loader logged: "on"
(wholly inside one), "off" (wholly outside all), "edge" otherwise. The
probes' cost is median(on) / median(off) - 1, a share of the step, with its
95% bootstrap interval.

  probe_windows.py LOADER_LOG STEP_TIMES [SKIP [PER]]
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
from ratio import difference, interval  # noqa: E402
from window_counts import windows  # noqa: E402


def main():
    win = windows(sys.argv[1])
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    by = {"on": [], "off": [], "edge": []}
    for line in open(sys.argv[2]):
        i, s, e = map(int, line.split())
        if i < skip:
            continue
        if any(o <= s and e < c for o, c in win):
            label = "on"
        elif all(e < o or s >= c for o, c in win):
            label = "off"
        else:
            label = "edge"
        by[label].append((e - s) / 1e6)
    for label, xs in by.items():
        if xs:
            print("%s: %d steps, median %.3f ms" % (label, len(xs), statistics.median(xs)))
    if by["on"] and by["off"]:
        r, lo, hi = interval(by["on"], by["off"])
        print("probes (on / off - 1): %+.2f%% [%+.2f%%, %+.2f%%] of the step (%d windows)" %
              (100 * (r - 1), 100 * (lo - 1), 100 * (hi - 1), len(win)))
        if per:
            d, lo, hi = difference(by["on"], by["off"])
            print("probes per launch: %+.0f ns [%+.0f, %+.0f] (%d launches a step)" %
                  (d * 1e6 / per, lo * 1e6 / per, hi * 1e6 / per, per))


if __name__ == "__main__":
    main()
