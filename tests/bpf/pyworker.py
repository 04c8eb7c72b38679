"""Backward passes as PyTorch runs them: one native thread of its own
(PYPROG_NATIVE_LIB's nofp_worker_run) launches py_back while the Python
caller waits, from two call sites in turn, ROUNDS times each:

    <module> -> main -> at_a -> backward -> (the worker thread)   (N launches)
                main -> at_b -> backward -> (the worker thread)   (N launches)

Every launch belongs under the site the main thread waits at: the worker's
own stack is the same for both. Waits for the file READY before it launches
(the loader has found the interpreter), for GO after a first pass at each
site (ROUNDS passes follow), and prints its launch count.

    pyworker.py N ROUNDS READY GO
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pystub import checker, cubin, driver, settle, vp  # noqa: E402

cu = driver()
check = checker("pyworker")
native = ctypes.CDLL(os.environ["PYPROG_NATIVE_LIB"])
native.nofp_worker_run.argtypes = [vp, vp, ctypes.c_int]


def backward(ctx, back, n):
    check(native.nofp_worker_run(ctx, back, n))


def at_a(ctx, back, n):
    backward(ctx, back, n)


def at_b(ctx, back, n):
    backward(ctx, back, n)


def main():
    n, rounds, ready, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    check(cu.cuInit(0))
    while not os.path.exists(ready):
        time.sleep(0.01)
    dev, ctx, mod, back = ctypes.c_int(), vp(), vp(), vp()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0))
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check(cu.cuCtxSetCurrent(ctx))
    check(cu.cuModuleLoadData(ctypes.byref(mod), cubin(["py_back"])))
    check(cu.cuModuleGetFunction(ctypes.byref(back), mod, b"py_back"))
    for r in range(rounds + 1):
        if r == 1:  # both sites' keys installed before the rounds that count on them
            while not os.path.exists(go):
                time.sleep(0.01)
        at_a(ctx, back, n)
        at_b(ctx, back, n)
    check(cu.cuCtxSynchronize())
    print("pyworker: launches=%d" % (2 * n * (rounds + 1)))
    settle("GP_PY_DONE", 0.3)  # code objects are read within a tick of each launch


if __name__ == "__main__":
    main()
