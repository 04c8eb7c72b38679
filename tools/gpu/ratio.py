"""Two sets of step times inside one process compared: the ratio, or the
difference, of their medians and its 95% bootstrap interval (the per-step
spread, as if steps were independent); and the mean of several units'
costs (cycles, windows) with its 95% bootstrap interval over the units."""
import operator
import random
import statistics


def _bootstrap(a, b, op, n):
    """op(median(a), median(b)), and its 95% bootstrap interval over n resamples."""
    rng = random.Random(1)
    xs = sorted(op(statistics.median(rng.choices(a, k=len(a))),
                   statistics.median(rng.choices(b, k=len(b)))) for _ in range(n))
    return op(statistics.median(a), statistics.median(b)), xs[int(0.025 * n)], xs[int(0.975 * n)]


def interval(a, b, n=2000):
    """Ratio of medians median(a)/median(b), and its 95% bootstrap interval."""
    return _bootstrap(a, b, operator.truediv, n)


def difference(a, b, n=2000):
    """Difference of medians median(a) - median(b), and its 95% bootstrap interval."""
    return _bootstrap(a, b, operator.sub, n)


def mean_interval(costs, n=2000):
    """The mean of costs (one per unit: a cycle, a window), and its 95%
    bootstrap interval over the units."""
    rng = random.Random(1)
    boot = sorted(sum(xs) / len(xs) for xs in (rng.choices(costs, k=len(costs)) for _ in range(n)))
    return sum(costs) / len(costs), boot[int(0.025 * n)], boot[int(0.975 * n) - 1]
