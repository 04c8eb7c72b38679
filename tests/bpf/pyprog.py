"""A Python program with a known call structure that launches kernels on the
stub libcuda through ctypes: the e2e_python test checks that its GPU time sits
under these functions, in this order, with their lines.

    <module> -> train_step -> model -> layer -> launch        (py_gemm, grid 2)
                                     layer -> attention -> launch  (py_relu, grid 3)
                  train_step -> backward -> (a native thread of
                      PYPROG_NATIVE_LIB's nofp_spawn, as autograd's)   (py_back, grid 2)
"""
import os
import ctypes
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pystub import checker, cubin, driver, settle, vp  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
cu = driver()
check = checker("pyprog")


def launch(fn, grid):
    check(cu.cuLaunchKernel(fn, grid, 1, 1, 32, 1, 1, 0, None, None, None))  # LAUNCH_LINE


def attention(relu):
    launch(relu, 3)


def layer(gemm, relu):
    launch(gemm, 2)
    attention(relu)


def model(gemm, relu):
    for _ in range(N):
        layer(gemm, relu)


def backward(back):
    check(native.nofp_spawn(ctx, back, N))


def train_step(gemm, relu, back):
    model(gemm, relu)
    if native:
        backward(back)


check(cu.cuInit(0))
# The loader finds the interpreter on its next tick (100 ms): launches before
# that carry native frames only. A real job imports for seconds first; the
# tests say when (GP_PY_GO).
settle("GP_PY_GO", 0.3)
dev, ctx, mod = ctypes.c_int(), vp(), vp()
check(cu.cuDeviceGet(ctypes.byref(dev), 0))
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
check(cu.cuCtxSetCurrent(ctx))
native = ctypes.CDLL(os.environ["PYPROG_NATIVE_LIB"]) if os.environ.get("PYPROG_NATIVE_LIB") else None
if native:
    native.nofp_spawn.argtypes = [vp, vp, ctypes.c_int]
image = cubin(["py_gemm", "py_relu", "py_back"])
check(cu.cuModuleLoadData(ctypes.byref(mod), image))
gemm, relu = vp(), vp()
check(cu.cuModuleGetFunction(ctypes.byref(gemm), mod, b"py_gemm"))
check(cu.cuModuleGetFunction(ctypes.byref(relu), mod, b"py_relu"))
back = vp()
check(cu.cuModuleGetFunction(ctypes.byref(back), mod, b"py_back"))
train_step(gemm, relu, back)
check(cu.cuCtxSynchronize())
print("pyprog: launches=%d" % ((3 if native else 2) * N))
# The loader reads code objects (names, lines) within a tick of each launch;
# an interpreter finalised right after its last launch frees them first
# (GP_PY_DONE: the tests say when every launch was read).
settle("GP_PY_DONE", 0.3)
