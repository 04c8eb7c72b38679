"""Python launches the BPF walk must find in less usual places, on the stub
libcuda through ctypes (the e2e_python test checks the profile):

    THREADS Python threads, each N launches of py_thr under
        thread_launch <- thread_main: each thread's own frames, found by
        stepping over the others' thread states (CPython lists the newest
        first, so each thread sits at another place in the list);
    N launches of py_deep from DEPTH nested calls of deep(): the walk copies
        the youngest GP_PY_MAX_FRAMES (64) and says the rest are missing.

Usage: pythreads.py N THREADS DEPTH
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pystub import checker, cubin, driver, settle, vp  # noqa: E402

N, THREADS, DEPTH = (int(x) for x in sys.argv[1:4])
cu = driver()
check = checker("pythreads")


def thread_launch(fn):
    check(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None))


def thread_main(ctx, fn, start):
    check(cu.cuCtxSetCurrent(ctx))
    start.wait()  # all threads exist (and are listed) before any launches
    for _ in range(N):
        thread_launch(fn)


def deep(fn, k):
    if k > 1:
        return deep(fn, k - 1)
    for _ in range(N):
        check(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None))


check(cu.cuInit(0))
settle("GP_PY_GO", 0.3)  # the loader finds the interpreter on its next tick
dev, ctx, mod = ctypes.c_int(), vp(), vp()
check(cu.cuDeviceGet(ctypes.byref(dev), 0))
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
check(cu.cuCtxSetCurrent(ctx))
check(cu.cuModuleLoadData(ctypes.byref(mod), cubin(["py_thr", "py_deep"])))
thr, dp = vp(), vp()
check(cu.cuModuleGetFunction(ctypes.byref(thr), mod, b"py_thr"))
check(cu.cuModuleGetFunction(ctypes.byref(dp), mod, b"py_deep"))
start = threading.Barrier(THREADS)
threads = [threading.Thread(target=thread_main, args=(ctx, thr, start)) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
deep(dp, DEPTH)
check(cu.cuCtxSynchronize())
print("pythreads: launches=%d" % (N * (THREADS + 1)))
settle("GP_PY_DONE", 0.3)  # code objects are read within a tick of each launch
