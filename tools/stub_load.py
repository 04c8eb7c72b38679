"""Launch loads for measuring the loader without a GPU (tools/loader-cpu.sh),
on the stub libcuda through ctypes; waits for the file GO (if given) first.

    stub_load.py paced STEPS PER_STEP PERIOD_MS [GO]
        STEPS steps of PER_STEP launches, PERIOD_MS apart: a training loop's
        rate (40 every 25 ms: 1,600 a second) rather than a flood;
    stub_load.py deep N DEPTH [GO]
        N times, 8 launches under DEPTH Python calls each made through C
        (map()), so each stack carries DEPTH evaluation-loop runs and
        native frames between them, as PyTorch's modules do.
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


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    go = args[3] if mode == "paced" and len(args) > 3 else args[2] if mode == "deep" and len(args) > 2 else None
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
    else:
        raise SystemExit("stub_load: unknown mode %s" % mode)
    print("stub_load: launches=%d s=%.2f" % (n, time.time() - t0))
    time.sleep(0.3)  # code objects are read within a tick of each launch


if __name__ == "__main__":
    main()
