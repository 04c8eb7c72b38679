"""Launch loads for measuring the loader without a GPU (tools/loader-cpu.sh),
on the stub libcuda through ctypes; waits for the file GO (if given) first.

    stub_load.py paced STEPS PER_STEP PERIOD_MS [GO]
        STEPS steps of PER_STEP launches, PERIOD_MS apart: a training loop's
        rate (40 every 25 ms: 1,600 a second) rather than a flood;
    stub_load.py deep N DEPTH [GO]
        N times, 8 launches under DEPTH Python calls each made through C
        (map()), so each stack carries DEPTH evaluation-loop runs and
        native frames between them, as PyTorch's modules do;
    stub_load.py modules N DEPTH [GO]
        N forward passes of a model of DEPTH nested callable objects (each
        call through type.__call__ in C, then __call__, _call_impl and
        forward in Python: nn.Module's shape), 8 launches at the leaf, after
        20 passes, 2.5 s, 20 more and 0.5 s for the loader to cache their stacks.
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bpf"))
from pystub import cubin, driver, vp  # noqa: E402

cu = driver()


def setup(n):
    dev, ctx, mod = ctypes.c_int(), vp(), vp()
    for r in (cu.cuInit(0), cu.cuDeviceGet(ctypes.byref(dev), 0),
              cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), cu.cuCtxSetCurrent(ctx),
              cu.cuModuleLoadData(ctypes.byref(mod), cubin(["k%d" % i for i in range(n)]))):
        if r:
            raise SystemExit("stub_load: CUDA error %d" % r)
    fns = []
    for i in range(n):
        f = vp()
        cu.cuModuleGetFunction(ctypes.byref(f), mod, b"k%d" % i)
        fns.append(f)
    return fns


def launch(f):
    cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)


def level(fns, d):
    if d == 0:
        for f in fns:
            launch(f)
        return 0
    return list(map(lambda x: level(fns, x), [d - 1]))[0]


class Module:
    """nn.Module's call path: the instance called (through C), then three Python frames."""

    def __init__(self, child, fns):
        self.child, self.fns = child, fns

    def __call__(self, x):
        return self._call_impl(x)

    def _call_impl(self, x):
        return self.forward(x)

    def forward(self, x):
        if self.child is None:
            for f in self.fns:
                launch(f)
            return x + 1
        return self.child(x) + 1


def model(fns, depth):
    m = None
    for _ in range(depth):
        m = Module(m, fns)
    return m


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    go = args[3] if mode == "paced" and len(args) > 3 else args[2] if mode in ("deep", "modules") and len(args) > 2 else None
    fns = setup(8)
    while go and not os.path.exists(go):
        time.sleep(0.01)
    time.sleep(0.3)  # the loader finds the interpreter on its next tick
    t0, n = time.time(), 0
    if mode == "paced":
        steps, per, period = int(args[0]), int(args[1]), int(args[2]) / 1000.0
        for _ in range(steps):
            for i in range(per):
                launch(fns[i % len(fns)])
            n += per
            time.sleep(period)
    elif mode == "deep":
        for _ in range(int(args[0])):
            level(fns, int(args[1]))
            n += len(fns)
    elif mode == "modules":
        m = model(fns, int(args[1]))
        for i in range(int(args[0]) + 40):
            if i in (20, 40):  # the stacks met, once the loader (its scan: 2 s) knows the
                time.sleep(2.5 if i == 20 else 0.5)  # interpreter; then time to cache them
                t0, n = time.time(), 0
            m(0)
            n += len(fns)
    else:
        raise SystemExit("stub_load: unknown mode %s" % mode)
    print("stub_load: launches=%d s=%.2f" % (n, time.time() - t0))
    time.sleep(0.3)  # code objects are read within a tick of each launch


if __name__ == "__main__":
    main()
