"""Two sets of step times inside one process compared: the ratio, or the
difference, of their medians and its 95% bootstrap interval (the per-step
spread)."""
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
