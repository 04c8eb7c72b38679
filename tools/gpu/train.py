"""A small PyTorch training loop for profiling runs: eager steps through
cuBLAS (a transformer encoder) and cuDNN (convolutions), then a CUDA-graph
replay of the forward pass, then (BIG_STEPS > 0) a GPU-bound bf16 training
step of a larger transformer (the bench's workload (e)). Deterministic, so
runs can be compared byte for byte. Prints the final loss and a parameter
checksum, and step timings.

Environment: STEPS (default 20), GRAPH_REPLAYS (default 20), BIG_STEPS
(default 0); STEP_TIMES=FILE gets "step start_ns end_ns" a line (CLOCK_MONOTONIC,
from before the step to after its synchronize; BIG_STEP_TIMES=FILE the same
for the big steps); FIRST_STEP_MARK=FILE is
created once the first step has finished
and STEPS_DONE_MARK=FILE once the last has (benchmarks read counters then: it
waits half a second after it); TORCH_PROFILE=FILE runs the training steps
(only them) under torch.profiler with activities=[CUDA] and writes
{name: [launches, GPU us]} as JSON to FILE (and the big steps' to FILE.big):
the peer of tools/gpu/bench, and the reference of tools/completeness.py.
PEER_WINDOWS=LOG switches torch.profiler on and off in one-second windows
(WINDOW seconds) during both training phases and logs the edges to LOG
(tools/gpu/peer_windows.sh).
"""
import json
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from peer import kernel_counts, profiled, windows  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU())
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        f = self.conv(x)                      # B, 64, 16, 16
        seq = f.flatten(2).transpose(1, 2)    # B, 256, 64
        return self.head(self.encoder(seq).mean(dim=1))


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def graph_replay(model, x, replays):
    static_x = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        out = model(static_x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()
    return out, (time.perf_counter() - t0) / max(replays, 1)


class Big(nn.Module):
    """A transformer large enough that the GPU is busy most of a step: six
    layers of width 1024 over 16 sequences of 1024 tokens, a vocabulary head."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
        self.head = nn.Linear(1024, 4096)

    def forward(self, x):
        return self.head(self.encoder(x))


def big_phase(steps, prof_path, peer):
    """(e): bf16 autocast training steps; the median step time in ms and the last loss."""
    torch.manual_seed(1)
    model = Big().cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(16, 1024, 1024, device="cuda")
    y = torch.randint(0, 4096, (16, 1024), device="cuda")
    times, loss = [], None
    step_times = open(os.environ["BIG_STEP_TIMES"], "w") if os.environ.get("BIG_STEP_TIMES") else None
    with profiled(prof_path) as prof:
        for i in range(steps):
            if peer:
                peer.before_step()
            t0 = time.perf_counter()
            m0 = time.monotonic_ns()
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(x)
                loss = nn.functional.cross_entropy(out.float().view(-1, 4096), y.view(-1))
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if step_times:
                step_times.write("%d %d %d\n" % (i, m0, time.monotonic_ns()))
    if step_times:
        step_times.close()
    if peer:
        peer.close()
    if prof is not None:
        with open(prof_path, "w") as f:
            json.dump(kernel_counts(prof), f)
    times.sort()
    return 1000 * times[len(times) // 2], loss.item()


def main():
    steps = int(os.environ.get("STEPS", "20"))
    replays = int(os.environ.get("GRAPH_REPLAYS", "20"))
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    t_start = time.perf_counter()
    model = Net().cuda().eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    times = []
    loss = None
    prof_path = os.environ.get("TORCH_PROFILE")
    step_times = open(os.environ["STEP_TIMES"], "w") if os.environ.get("STEP_TIMES") else None
    peer = windows()
    with profiled(prof_path) as prof:
        for i in range(steps):
            if peer:
                peer.before_step()
            t0 = time.perf_counter()
            m0 = time.monotonic_ns()
            loss = train_step(model, opt, x, y)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if step_times:
                step_times.write("%d %d %d\n" % (i, m0, time.monotonic_ns()))
            if i == 0:
                first = time.perf_counter() - t_start
                mark = os.environ.get("FIRST_STEP_MARK")
                if mark:
                    open(mark, "w").close()
    if step_times:
        step_times.close()
    if peer:
        peer.close()
    if prof is not None:
        with open(prof_path, "w") as f:
            json.dump(kernel_counts(prof), f)
    done = os.environ.get("STEPS_DONE_MARK")
    if done:
        open(done, "w").close()
        time.sleep(0.5)
    out, replay_s = graph_replay(model, x, replays)
    checksum = sum(p.double().sum().item() for p in model.parameters())
    times.sort()
    if steps:  # STEPS=0: the big steps only
        print("result loss=%.10f checksum=%.10f out=%.10f" % (loss.item(), checksum, out.double().sum().item()))
        print("timing first_step_s=%.4f median_step_ms=%.4f steps=%d replay_ms=%.4f" %
              (first, 1000 * times[len(times) // 2], steps, 1000 * replay_s))
    big_steps = int(os.environ.get("BIG_STEPS", "0"))
    if big_steps > 0:
        big_ms, big_loss = big_phase(big_steps, prof_path + ".big" if prof_path else None, peer)
        print("big loss=%.6f big_median_step_ms=%.4f big_steps=%d" % (big_loss, big_ms, big_steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
