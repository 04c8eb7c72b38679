"""Backward passes whose kernels the autograd engine's device thread
launches, for the whose-launch checks (issue 22, the backward half).

MODE=compile (default): a torch.compile training loop; its compiled backward
runs on the engine's device thread, with Python frames of its own.
MODE=eager: the same loop, not compiled.
MODE=overhead: MODE=compile with mode="reduce-overhead": forward and
backward each replayed as CUDA graphs (cudagraph trees), the backward's
replays launched by the engine's device thread.
MODE=two: two threads, each with its own model on its own stream, each
calling backward at once from its own step function (step_a, step_b): the
engine's one device thread serves both graph tasks.

Every step's forward and backward are called from a function named for it
(compile_step, eager_step, step_a, step_b; compile_warmup for the steps
that compile), so a profile can be checked for GPU time under it. STEPS (default 20). TORCH_PROFILE=FILE writes
{name: [launches, GPU us]} of the steps, as tools/gpu/train.py does.
Prints the main thread's tid and the median step time.
"""
import contextlib
import json
import os
import threading
import time

import torch
import torch.nn as nn

from peer import kernel_counts, profiled


class Block(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def make_model():
    return nn.Sequential(*[Block() for _ in range(4)], nn.Linear(512, 10)).cuda()


def loss_of(model, x, y):
    return nn.functional.cross_entropy(model(x).mean(dim=1), y)


def train_body(model, opt, x, y):
    if MARK_STEP:
        torch.compiler.cudagraph_mark_step_begin()
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model, x, y)
    loss.backward()
    opt.step()
    return loss


MARK_STEP = os.environ.get("MODE") == "overhead"


def compile_step(model, opt, x, y):
    return train_body(model, opt, x, y)


def compile_warmup(model, opt, x, y):
    """compile_step's twin, for the steps that compile (outside the profiled ones)."""
    return train_body(model, opt, x, y)


def eager_step(model, opt, x, y):
    return train_body(model, opt, x, y)


def step_a(model, opt, x, y):
    return train_body(model, opt, x, y)


def step_b(model, opt, x, y):
    return train_body(model, opt, x, y)


def batch():
    return (torch.randn(64, 128, 512, device="cuda"),
            torch.randint(0, 10, (64,), device="cuda"))


def run_loop(step, model, steps, data, stream=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = data
    times = []
    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    with ctx:
        for _ in range(steps):
            t0 = time.perf_counter()
            step(model, opt, x, y)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    times.sort()
    return 1000 * times[len(times) // 2]


def main():
    mode = os.environ.get("MODE", "compile")
    steps = int(os.environ.get("STEPS", "20"))
    torch.manual_seed(0)
    print("main tid %d mode %s" % (threading.get_native_id(), mode), flush=True)
    model = make_model()
    data = batch()  # made before any profiled step: the steps alone are compared
    prof_path = os.environ.get("TORCH_PROFILE")
    if mode in ("compile", "overhead"):
        cmodel = torch.compile(model, mode="reduce-overhead" if mode == "overhead" else "default")
        run_loop(compile_warmup, cmodel, 5, data)  # compiles (and records graphs) outside the profiled steps
        with profiled(prof_path) as prof:
            ms = run_loop(compile_step, cmodel, steps, data)
    elif mode == "eager":
        with profiled(prof_path) as prof:
            ms = run_loop(eager_step, model, steps, data)
    else:
        other, other_data = make_model(), batch()
        res = {}
        with profiled(prof_path) as prof:
            t = threading.Thread(target=lambda: res.setdefault(
                "b", run_loop(step_b, other, steps, other_data, torch.cuda.Stream())))
            t.start()
            ms = run_loop(step_a, model, steps, data, torch.cuda.Stream())
            t.join()
    if prof is not None:
        with open(prof_path, "w") as f:
            json.dump(kernel_counts(prof), f)
    print("timing mode=%s median_step_ms=%.4f steps=%d" % (mode, ms, steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
