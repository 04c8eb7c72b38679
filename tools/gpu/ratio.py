"""The ratio of two sets of step times inside one process: the ratio of
their medians and its 95% bootstrap interval (the per-step spread)."""
import random
import statistics


def interval(a, b, n=2000):
    """Ratio of medians median(a)/median(b), and its 95% bootstrap interval."""
    rng = random.Random(1)
    rs = sorted(statistics.median(rng.choices(a, k=len(a))) /
                statistics.median(rng.choices(b, k=len(b))) for _ in range(n))
    return statistics.median(a) / statistics.median(b), rs[int(0.025 * n)], rs[int(0.975 * n)]


def difference(a, b, n=2000):
    """Difference of medians median(a) - median(b), and its 95% bootstrap interval."""
    rng = random.Random(1)
    ds = sorted(statistics.median(rng.choices(a, k=len(a))) -
                statistics.median(rng.choices(b, k=len(b))) for _ in range(n))
    return statistics.median(a) - statistics.median(b), ds[int(0.025 * n)], ds[int(0.975 * n)]
