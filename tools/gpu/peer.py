"""torch.profiler as the peer of tools/gpu/train.py and autograd.py: around
the profiled steps when TORCH_PROFILE names a file, and what it recorded as
{name: [launches, GPU us]} (tools/completeness.py reads that JSON).
"""
import contextlib
import os
import random
import time

import torch


def profiled(path):
    """torch.profiler around the steps, when asked for: the peer."""
    if not path:
        return contextlib.nullcontext(None)
    from torch.profiler import ProfilerActivity, profile
    return profile(activities=[ProfilerActivity.CUDA])


def kernel_counts(prof):
    """{name: [launches, GPU microseconds]} of the CUDA events recorded."""
    counts = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            c = counts.setdefault(ev.name, [0, 0.0])
            c[0] += 1
            c[1] += ev.time_range.elapsed_us()
    return counts


class Windows:
    """torch.profiler (activities=[CUDA], as profiled()) switched on for a
    window of WINDOW seconds at a random offset in every period of twice
    that (a duty cycle of 0.5), at step boundaries, a new profile object a
    window. Each edge is logged as the loader's -v logs its duty windows
    ("duty: window open at NS", CLOCK_MONOTONIC), so that probe_windows.py
    labels the peer's steps as it labels ours."""

    def __init__(self, log_path, window_s):
        self.log = open(log_path, "w")
        self.win = int(window_s * 1e9)
        self.rng = random.Random()
        self.prof = None
        self._plan(time.monotonic_ns())

    def _plan(self, start):
        self.end = start + 2 * self.win
        self.open_at = start + self.rng.randrange(self.win)
        self.close_at = self.open_at + self.win

    def before_step(self):
        now = time.monotonic_ns()
        while now >= self.end:
            self._plan(self.end)
        want = self.open_at <= now < self.close_at
        if want and self.prof is None:
            from torch.profiler import ProfilerActivity, profile
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            self.prof.start()
            self.log.write("duty: window open at %d\n" % time.monotonic_ns())
        elif not want and self.prof is not None:
            self.close()

    def close(self):
        if self.prof is not None:
            self.log.write("duty: window closed at %d\n" % time.monotonic_ns())
            self.log.flush()
            self.prof.stop()
            self.prof = None


def windows():
    """PEER_WINDOWS=LOG (train.py): the peer's windows, or None."""
    path = os.environ.get("PEER_WINDOWS")
    return Windows(path, float(os.environ.get("WINDOW", "1"))) if path else None
