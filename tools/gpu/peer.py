"""torch.profiler as the peer of tools/gpu/train.py and autograd.py: around
the profiled steps when TORCH_PROFILE names a file, and what it recorded as
{name: [launches, GPU us]} (tools/completeness.py reads that JSON).
"""
import contextlib

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
