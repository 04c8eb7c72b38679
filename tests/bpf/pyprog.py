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
import struct
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
cu = ctypes.CDLL("libcuda.so.1")
vp = ctypes.c_void_p
ui = ctypes.c_uint
cu.cuLaunchKernel.argtypes = [vp, ui, ui, ui, ui, ui, ui, ui, vp, vp, vp]


def check(r):
    if r != 0:
        raise SystemExit("pyprog: CUDA error %d" % r)


def cubin(names):
    """A tiny ELF64 cubin as tests/progs/cubin.h lays it out: .text, .strtab,
    .symtab (one global FUNC per kernel), .shstrtab, section headers last."""
    shstr = b"\0.text\0.strtab\0.symtab\0.shstrtab\0"
    text = b"".join(bytes([i + 1]) * 16 for i in range(len(names)))
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    syms = [b"\0" * 24]
    off = 1
    for i, n in enumerate(names):
        syms.append(struct.pack("<IBBHQQ", off, 0x12, 0, 1, 16 * i, 16))
        off += len(n) + 1
    symtab = b"".join(syms)
    body, offs = b"", []
    for part in (text, strtab, symtab, shstr):
        pad = (-(64 + len(body))) % 8
        body += b"\0" * pad
        offs.append(64 + len(body))
        body += part
    body += b"\0" * ((-(64 + len(body))) % 8)
    shoff = 64 + len(body)
    eh = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    eh += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 5, 4)
    sh = [b"\0" * 64]
    sh.append(struct.pack("<IIQQQQIIQQ", 1, 1, 6, 0, offs[0], len(text), 0, 0, 1, 0))
    sh.append(struct.pack("<IIQQQQIIQQ", 7, 3, 0, 0, offs[1], len(strtab), 0, 0, 1, 0))
    sh.append(struct.pack("<IIQQQQIIQQ", 15, 2, 0, 0, offs[2], len(symtab), 2, 1, 8, 24))
    sh.append(struct.pack("<IIQQQQIIQQ", 23, 3, 0, 0, offs[3], len(shstr), 0, 0, 1, 0))
    return eh + body + b"".join(sh)


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
# that carry native frames only. A real job imports for seconds first.
time.sleep(0.3)
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
# an interpreter finalised right after its last launch frees them first.
time.sleep(0.3)
