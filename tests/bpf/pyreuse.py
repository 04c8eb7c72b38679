"""A Python code object freed and another made at its address, on the stub
libcuda through ctypes: the stack cache and the loader's code objects must
name the new one (tests/bpf/e2e_cache.sh).

    pyreuse.py N READY GO [DONE]

Once the file READY exists (the loader has found the interpreter), N
launches from first_fn (made by exec), then, once the file GO exists,
first_fn is dropped and functions of the same shape are made until one's
code object lands at first_fn's address (exit 3 if none does in 1000
tries): after 0.3 s (the loader checks a process's code objects at most
every 0.1 s: its last check, made before the swap, is then older than
that when it reads the next launch), N launches from it, other_fn; then,
once DONE exists (if given: the loader has found the swap while the
process lives), it exits. Prints "pyreuse: launches=2N reused=K".
"""
import ctypes
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pystub import checker, cubin, driver, vp  # noqa: E402

cu = driver()
check = checker("pyreuse")


def setup():
    dev, ctx, mod, f = ctypes.c_int(), vp(), vp(), vp()
    for r in (cu.cuInit(0), cu.cuDeviceGet(ctypes.byref(dev), 0),
              cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), cu.cuCtxSetCurrent(ctx),
              cu.cuModuleLoadData(ctypes.byref(mod), cubin(["py_reuse"]))):
        check(r)
    check(cu.cuModuleGetFunction(ctypes.byref(f), mod, b"py_reuse"))
    return f


KERNEL = setup()


def launch():
    check(cu.cuLaunchKernel(KERNEL, 1, 1, 1, 32, 1, 1, 0, None, None, None))


def make(name):
    """A function made at run time, of one shape whatever its name (8 letters)."""
    ns = {"launch": launch}
    exec(compile("def %s():\n    launch()\n" % name, "<pyreuse>", "exec"), ns)
    return ns[name]


def run(fn, n):
    for _ in range(n):
        fn()


def wait_for(path):
    """Waits for path; a test that never makes it failed: exit, do not hang."""
    for _ in range(12000):
        if os.path.exists(path):
            return
        time.sleep(0.01)
    raise SystemExit("pyreuse: %s never came (120 s)" % path)


def main():
    n, ready, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    wait_for(ready)
    fn = make("first_fn")
    addr = id(fn.__code__)
    run(fn, n)
    wait_for(go)
    del fn
    gc.collect()
    for tries in range(1000):
        fn = make("other_fn")
        if id(fn.__code__) == addr:
            break
        del fn
    else:
        print("pyreuse: no code object came back at 0x%x" % addr)
        return 3
    time.sleep(0.3)
    run(fn, n)
    check(cu.cuCtxSynchronize())
    print("pyreuse: launches=%d reused=%d" % (2 * n, tries + 1))
    if len(sys.argv) > 4:
        wait_for(sys.argv[4])
    else:
        time.sleep(0.3)  # code objects are read within a tick of each launch
    return 0


if __name__ == "__main__":
    sys.exit(main())
