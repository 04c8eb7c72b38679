"""One process, recording switched on and off under it: what a window of
full profiling costs, each step labelled by the state its shim was in.

Runs train.py's small training step ((b), MODEL=small, the default) or its
GPU-bound bf16 step ((e), MODEL=big) for DURATION seconds (default 60) and
writes "step_ms label" per step to OUT (argv[1]). The label is read from the
process's own shim ring header (shim/gp_abi.h) before and after the step
(LABELS=bare: no ring, every step "bare"): "on"
when activity was on at both reads (a loader reading), "off" when it was off
at both, "edge" otherwise; "off" steps before the first "on" are "idle" (the
shim alone, never switched on), those after it "after" (what CUPTI leaves
behind once its activity is switched off). With LABEL_BY=reader the label
says whether a loader held the ring instead (the consumer's reader_pid):
run with GPUPROBE_RECORD=always, "on" steps are those of a loader attached
for a window (its start included) and "after" steps the shim recording
alone, so on / (idle and after) is what a short --pid attach costs while it
lasts. (The probes' steady cost, one loader attached throughout and its
probes detached between windows: tools/gpu/probe_windows.sh.) Start it
with the shim injected;
tools/gpu/window_cost.sh attaches and detaches a loader around it. Prints
each label's median step and, against "idle", the ratio of medians with a
95% bootstrap interval (the per-step spread inside one process).
"""
import os
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import train  # noqa: E402
from ratio import interval  # noqa: E402

FLAGS_OFF = 128 + 24  # gp_shm_producer.flags
F_RECORDING = 1 << 3
READER_OFF = 320 + 16  # gp_shm_consumer.reader_pid


def ring_flags_reader():
    """A function returning the shim header's flags, read through /proc/self/mem
    (LABELS=bare: none, every step "bare", for a run without the shim)."""
    if os.environ.get("LABELS") == "bare":
        return lambda: 0
    start = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "/memfd:gpuprobe-shm" in line:
                start = int(line.split("-")[0], 16)
                break
    if start is None:
        raise SystemExit("window_cost.py: no shim ring in this process (run it with the shim)")
    mem = open("/proc/self/mem", "rb", buffering=0)
    by_reader = os.environ.get("LABEL_BY") == "reader"

    def flags():
        if by_reader:
            mem.seek(start + READER_OFF)
            return F_RECORDING if struct.unpack("<I", mem.read(4))[0] else 0
        mem.seek(start + FLAGS_OFF)
        return struct.unpack("<I", mem.read(4))[0]
    return flags


def small_step():
    model = train.Net().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    return lambda: train.train_step(model, opt, x, y)


def big_step():
    model = train.Big().cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(16, 1024, 1024, device="cuda")
    y = torch.randint(0, 4096, (16, 1024), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x).float().view(-1, 4096), y.view(-1))
        loss.backward()
        opt.step()
    return step


def main():
    out, duration = sys.argv[1], float(os.environ.get("DURATION", "60"))
    torch.manual_seed(0)
    step = big_step() if os.environ.get("MODEL") == "big" else small_step()
    for _ in range(5):  # warm up: first steps pick algorithms, allocate
        step()
    torch.cuda.synchronize()
    flags = ring_flags_reader()
    print("window_cost: ready", flush=True)
    rows, seen_on, end = [], False, time.perf_counter() + duration
    while time.perf_counter() < end:
        a = flags() & F_RECORDING
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) * 1000
        b = flags() & F_RECORDING
        label = "on" if a and b else "edge" if a or b else "after" if seen_on else "idle"
        if os.environ.get("LABELS") == "bare":
            label = "bare"
        seen_on = seen_on or bool(a and b)
        rows.append((t, label))
    with open(out, "w") as f:
        for t, label in rows:
            f.write(f"{t:.4f} {label}\n")
    by = {}
    for t, label in rows:
        by.setdefault(label, []).append(t)
    for label in ("bare", "idle", "on", "after", "edge"):
        if label in by:
            print(f"{label}: {len(by[label])} steps, median {statistics.median(by[label]):.3f} ms")
    for label in ("on", "after"):
        if label in by and len(by.get("idle", [])) > 10 and len(by[label]) > 10:
            r, lo, hi = interval(by[label], by["idle"])
            print(f"{label} / idle: {r:.4f} [{lo:.4f}, {hi:.4f}] (ratio of medians, 95% bootstrap)")
    shim = by.get("idle", []) + by.get("after", [])
    if os.environ.get("LABEL_BY") == "reader" and len(by.get("on", [])) > 10 and len(shim) > 10:
        r, lo, hi = interval(by["on"], shim)
        print(f"attached / shim (on / idle and after): {r:.4f} [{lo:.4f}, {hi:.4f}] "
              "(ratio of medians, 95% bootstrap)")


if __name__ == "__main__":
    main()
