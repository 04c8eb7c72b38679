"""The bench's tables (tools/gpu/bench): per metric, each mode's median, min,
max and ratio to bare; the per-round differences with their mean and 95%
interval; the stack-cache issue's goals, each met only when its whole
interval lies under the bound; the launch program's ns per run after the
first step; the loader's cost; the losses.

    bench_table.py OUTDIR ROUNDS "MODE..."
"""
import glob
import math
import statistics
import sys

import loader_line

# Student's t, two-sided 95%, by degrees of freedom (rounds - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
       18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042}
UNITS = {"launch_ns": "(a) ns per launch", "launch_batch_ns": "(a) ns per launch, median batch",
         "step_ms": "(b) training step, ms", "replay_ms": "(c) CUDA-graph replay, ms",
         "first_step_s": "(d) start-up to first step, s", "big_step_ms": "(e) GPU-bound bf16 step, ms"}
LOSS_WORDS = ("full", "drop", "lost", "bad", "unattributed", "without", "errors", "short", "skipped",
              "exhausted", "too_large", "mismatch")


def interval(xs):
    """(mean, low, high) of the 95% interval of the mean of xs; None under 2 values."""
    if len(xs) < 2:
        return None
    m, sd = statistics.mean(xs), statistics.stdev(xs)
    df = len(xs) - 1
    t = T95.get(df) or T95[max(k for k in T95 if k <= df)]
    h = t * sd / math.sqrt(len(xs))
    return m, m - h, m + h


def main():
    out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
    rows, by_round = {}, {}
    for line in open(out + "/raw.txt"):
        mode, r, metric, v = line.split()
        rows.setdefault((metric, mode), []).append(float(v))
        by_round[(metric, mode, int(r))] = float(v)
    diffs = {}
    for metric, title in UNITS.items():
        base = rows.get((metric, "bare"))
        if not base:
            continue
        b = statistics.median(base)
        print(title)
        print("  %-5s %10s %10s %10s %7s" % ("mode", "median", "min", "max", "ratio"))
        for mode in modes:
            v = rows.get((metric, mode))
            if v:
                print("  %-5s %10.3f %10.3f %10.3f %7.3f" % (mode, statistics.median(v), min(v), max(v),
                                                           statistics.median(v) / b))
        pairs = [(m, "bare") for m in modes if m != "bare"]
        pairs += [(m, o) for m in ("full", "fullb") for o in ("shim", "peer") if m in modes and o in modes]
        pairs += [("pc", "full")] if "pc" in modes and "full" in modes else []
        print("  per round: A - B, mean [95% interval], in the unit and in % of the round's bare")
        for mode, other in pairs:
            per, pct = [], []
            for r in range(1, rounds + 1):
                a, o, z = (by_round.get((metric, x, r)) for x in (mode, other, "bare"))
                if a is not None and o is not None and z:
                    per.append(a - o)
                    pct.append(100.0 * (a - o) / z)
            ci, cp = interval(per), interval(pct)
            if ci:
                diffs[(metric, mode, other)] = (ci, cp)
                print("    %-5s - %-5s %+10.4g [%+.4g, %+.4g]   %+6.2f%% [%+.2f%%, %+.2f%%]   rounds: %s" % (
                    mode, other, ci[0], ci[1], ci[2], cp[0], cp[1], cp[2],
                    " ".join("%+.4g" % x for x in per)))
    goals(out, diffs)
    program(out)
    loader(out)
    losses(out)


def goals(out, diffs):
    print("goals (met only when the whole 95% interval lies under the bound)")
    want = [("launch_ns", "full", "shim", "unit", 1500.0, "(a) full - shim <= 1.5 us per launch"),
            ("step_ms", "full", "shim", "pct", 8.0, "(b) full - shim <= 8% of the step"),
            ("big_step_ms", "full", "shim", "pct", 3.0, "(e) full - shim <= 3% of the step"),
            ("step_ms", "full", "peer", "unit", 0.0, "(b) full below torch.profiler"),
            ("big_step_ms", "full", "peer", "unit", 0.0, "(e) full below torch.profiler")]
    for metric, a, b, kind, bound, text in want:
        d = diffs.get((metric, a, b))
        if not d:
            print("  %-40s not measured" % text)
            continue
        ci = d[0] if kind == "unit" else d[1]
        print("  %-40s %s: mean %+.4g, interval [%+.4g, %+.4g]" % (
            text, "MET" if ci[2] <= bound else "MISSED", ci[0], ci[1], ci[2]))


def program(out):
    rows = {}
    for line in open(out + "/prog.txt"):
        mode, r, c1, t1, c2, t2 = line.split()
        c1, t1, c2, t2 = int(c1), int(t1), int(c2), int(t2)
        if c2 > c1 > 0:
            rows.setdefault(mode, []).append((t2 - t1) / (c2 - c1))
    for mode, v in rows.items():
        print("launch program on (b) after its first step (%s): median %.0f ns per run, runs %s" % (
            mode, statistics.median(v), " ".join("%.0f" % x for x in v)))


def loader(out):
    for mode in ("full", "fullb", "pc"):
        lines = [d for d in map(loader_line.last, sorted(glob.glob("%s/train-%s-*.log" % (out, mode))))
                 if d and "share_with_helper_pct" in d]
        if not lines:
            continue
        print("loader (%s, train.py): cpu %.1f%% of one core with its CRC helper (median, max %.1f%%), "
              "peak RSS %.0f MB (max)" % (
                  mode, statistics.median(d["share_with_helper_pct"] for d in lines),
                  max(d["share_with_helper_pct"] for d in lines), max(d["max_rss_mb"] for d in lines)))
        keys = [k for k in ("cache_hit_pct", "cache_keys", "cache_splits", "memo_hit_pct") if k in lines[0]]
        print("  %s" % " ".join("%s=%s" % (k, "/".join("%g" % d[k] for d in lines)) for k in keys))


def losses(out):
    for wl in ("launch", "train"):
        for mode, pattern in (("full", "%s-full-*.log"), ("fullb", "%s-fullb-*.log"),
                              ("pc", "%s-pc-*.log"),
                              ("bpf", "%s-bpf-*.log.loader")):
            files = sorted(glob.glob(out + "/" + pattern % wl))
            if not files:
                continue
            seen = []
            for f in files:
                lines = [l for l in open(f) if l.startswith("counters:")]
                if not lines:
                    seen.append("no counters line in %s" % f.rsplit("/", 1)[1])
                for kv in (lines[-1].split()[1:] if lines else []):
                    kv = kv.strip("()")
                    k, _, v = kv.partition("=")
                    if v.isdigit() and int(v) and any(w in k for w in LOSS_WORDS) and \
                            not (mode == "bpf" and k == "launches_without_record"):
                        seen.append("%s in %s" % (kv, f.rsplit("/", 1)[1]))
            print("losses (%s, %s, %d runs): %s" % (mode, wl, len(files), "; ".join(seen) or "none"))


if __name__ == "__main__":
    main()
