"""What the Python programs that drive the stub libcuda through ctypes share:
the driver with cuLaunchKernel's argument types, a check of its results, and
a tiny cubin to load."""
import ctypes
import os
import struct
import sys
import time

vp = ctypes.c_void_p
ui = ctypes.c_uint


def driver():
    """libcuda.so.1 (the stub, by LD_LIBRARY_PATH), cuLaunchKernel's arguments typed."""
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuLaunchKernel.argtypes = [vp, ui, ui, ui, ui, ui, ui, ui, vp, vp, vp]
    return cu


def checker(who):
    """A function that ends the program, naming who, on a CUDA error."""
    def check(r):
        if r != 0:
            raise SystemExit("%s: CUDA error %d" % (who, r))
    return check


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


def settle(var, seconds):
    """Waits until the file named by environment variable var exists (the
    test touches it once the loader is where it must be: a handshake), or,
    with var unset, seconds (a run by hand)."""
    path = os.environ.get(var)
    if not path:
        time.sleep(seconds)
        return
    end = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit("%s: %s never came" % (var, path))
        time.sleep(0.01)
