"""The duty cycle's cost from tools/gpu/duty_cost.sh's step files.

argv: OUTDIR MODEL ROUNDS [MODES...] (default: bare duty). Per round, each
mode against bare as below; for duty: mean and median step time of the bare
and the duty run and their ratios (the mean is the average cost: windows and
the time between them; the median hides a 10% duty's windows); then the mean
of the per-round ratios of means with a 95% Student's t interval over the
rounds; and over all duty runs, the steps in a window against those between
(ratio of medians).
"""
import statistics
import sys

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def steps(path):
    rows = []
    with open(path) as f:
        for line in f:
            t, label = line.split()
            rows.append((float(t), label))
    return rows


def compare(out, model, rounds, mode):
    ratios, on, between = [], [], []
    for r in range(1, rounds + 1):
        bare = [t for t, _ in steps(f"{out}/bare-{model}-{r}.txt")]
        duty = steps(f"{out}/{mode}-{model}-{r}.txt")
        dt = [t for t, _ in duty]
        on += [t for t, lab in duty if lab == "on"]
        between += [t for t, lab in duty if lab in ("after", "idle")]
        ratio = statistics.mean(dt) / statistics.mean(bare)
        ratios.append(ratio)
        n_on = sum(1 for _, lab in duty if lab == "on")
        print(f"round {r}: bare {len(bare)} steps mean {statistics.mean(bare):.3f} ms "
              f"median {statistics.median(bare):.3f}; {mode} {len(dt)} steps ({n_on} in windows) "
              f"mean {statistics.mean(dt):.3f} median {statistics.median(dt):.3f}; "
              f"{mode}/bare mean {ratio:.4f} median {statistics.median(dt) / statistics.median(bare):.4f}")
    m = statistics.mean(ratios)
    if len(ratios) > 1:
        h = T95.get(len(ratios) - 1, 2.0) * statistics.stdev(ratios) / len(ratios) ** 0.5
        print(f"{model} {mode}: average cost ({mode}/bare, ratio of means) {100 * (m - 1):+.2f}% "
              f"[{100 * (m - h - 1):+.2f}, {100 * (m + h - 1):+.2f}] (95%, {len(ratios)} rounds)")
    if on and between:
        print(f"{model} {mode}: in windows / between, ratio of medians "
              f"{statistics.median(on) / statistics.median(between):.4f} ({len(on)} and {len(between)} steps)")


def main():
    out, model, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for mode in sys.argv[4:] or ["bare", "duty"]:
        if mode != "bare":
            compare(out, model, rounds, mode)


if __name__ == "__main__":
    main()
