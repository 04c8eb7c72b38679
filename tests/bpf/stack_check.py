#!/usr/bin/env python3
"""Checks whole stacks in a gpuprobe profile, read through `go tool pprof -raw`.

  stack_check.py FILE python SCRIPT N
      the profile of tests/bpf/pyprog.py N: all GPU time of py_gemm and py_relu
      (exactly N launches each, 2000 and 3000 ns per launch) sits under the
      script's Python functions in call order, with the line of each call,
      above the native frames that called into the interpreter, and every
      stack ends at _start; no frame says it was truncated.
  stack_check.py FILE pythreads SCRIPT N THREADS
      the profile of tests/bpf/pythreads.py N THREADS DEPTH (DEPTH > 64):
      py_thr's N * THREADS launches each under the launching thread's own
      thread_launch <- thread_main (not the main thread's frames), untruncated;
      py_deep's N launches each under exactly 64 Python frames, all deep(),
      and a note that more Python frames were not copied.
  stack_check.py FILE chain KERNEL COUNT FRAME...
      KERNEL was launched COUNT times, and every one of its stacks has exactly
      these frames (leaf first; "a|b" allows either) right after the launch
      API frame, and ends at a root (_start, or glibc's clone3, which Debian's
      libc names only by address unless libc6-dbg is installed), untruncated.
  stack_check.py FILE chain-short KERNEL COUNT MAX_SHORT FRAME...
      the same, except that up to MAX_SHORT launches may end in
      "[truncated: stack copy ended]" after a prefix of the chain.
  stack_check.py FILE split KERNEL NAME=COUNT...
      every launch of KERNEL has exactly one of the NAMEs in its stack, COUNT
      launches each, and every stack is whole (ends at a root, no frame that
      says it is short or unknown); split-fp: the same for
      frame-pointer stacks, which end where frame pointers do.
  stack_check.py FILE graph KERNEL COUNT NS CAPTURE REPLAY
      KERNEL, replayed by a CUDA graph, ran COUNT times for NS of GPU time,
      and every one of its stacks reads, leaf first: the kernel, the launch
      API that captured it (or the cuGraphAdd*Node call that added its
      node), frames down to CAPTURE, ..., "[graph captured
      at]", cuGraphLaunch, frames down to REPLAY, ..., a root; both halves
      whole.
  stack_check.py FILE graph-under KERNEL COUNT NS CAPTURE REPLAY MARK OUTER_API OUTER
      a graph replayed for another thread: the graph shape (CAPTURE, then
      "[graph captured at]", cuGraphLaunch, frames down to REPLAY, a root),
      then MARK, OUTER_API, frames down to OUTER, a root.
  stack_check.py FILE under KERNEL COUNT NS INNER MARK OUTER_API OUTER
      the same shape for any inner and outer stack: cuLaunchKernel, frames
      down to INNER, ..., a root, the frame MARK, OUTER_API, frames down to
      OUTER, ..., a root (an autograd thread's launch under the caller of
      its backward pass).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_check import parse_raw  # noqa: E402


def parse(path):
    """[(gpu ns, launches, [(name, file, line), ...] leaf first)] per sample."""
    return [(s["ns"], s["count"], s["where"]) for s in parse_raw(path)[0]]


def fail(msg, code=1):
    print("FAIL:", msg)
    sys.exit(code)


FRAMES_DIFFER = 3  # exit status when the counts hold but the stacks differ


def check_python(samples, script, n):
    src = open(script).read().splitlines()

    def line_of(stmt):  # the one line whose statement is stmt (or ends with it)
        return next(i + 1 for i, l in enumerate(src) if l.strip() == stmt or l.endswith(stmt))

    base = script.rsplit("/", 1)[-1]
    module = ("[module %s]" % base, line_of("train_step(gemm, relu, back)"))
    call = {"launch": line_of("# LAUNCH_LINE"), "model": line_of("layer(gemm, relu)"),
            "train_step": line_of("model(gemm, relu)")}
    want = {
        "py_gemm": (2000, [("launch", call["launch"]), ("layer", line_of("launch(gemm, 2)")),
                           ("model", call["model"]), ("train_step", call["train_step"]), module]),
        "py_relu": (3000, [("launch", call["launch"]), ("attention", line_of("launch(relu, 3)")),
                           ("layer", line_of("attention(relu)")), ("model", call["model"]),
                           ("train_step", call["train_step"]), module]),
    }
    if any(s[2] and s[2][0][0] == "py_back" for s in samples):
        want["py_back"] = (2000, [("backward", line_of("check(native.nofp_spawn(ctx, back, N))")),
                                  ("train_step", line_of("backward(back)")), module])
    for kernel, (per, chain) in want.items():
        got = [s for s in samples if s[2] and s[2][0][0] == kernel]
        ns, count = sum(s[0] for s in got), sum(s[1] for s in got)
        if count != n or ns != n * per:
            fail("%s: %d launches, %d ns; want %d, %d" % (kernel, count, ns, n, n * per))
        for s_ns, s_n, frames in got:
            names = [f[0] for f in frames]
            py = [(f[0], f[2]) for f in frames if f[1].endswith("/" + base)]
            expect = chain
            if py != expect:
                fail("%s: python frames %s, want %s" % (kernel, py, expect))
            first_py = names.index(chain[0][0])
            if kernel == "py_back":
                # a native thread's own frames to its root, then the main thread's Python
                if names[1:5] != ["cuLaunchKernel", "nofp_level3", "nofp_level2", "nofp_level1"] or \
                        names[first_py - 1] != "[launched for the main thread]":
                    fail("%s: native thread frames %s" % (kernel, names[:first_py]))
            elif names[1] != "cuLaunchKernel" or "ffi_call" not in names[2:first_py]:
                fail("%s: native frames between the launch and Python: %s" % (kernel, names[:first_py]))
            tail = names[first_py + len(chain):]
            if kernel == "py_back":  # the main thread's Python is all of its stack we have
                tail = ["_start"] + tail
            if len(tail) < 2 or tail[-2] != "_start" or any(x.startswith("[truncated") or
                                                        x.startswith("[native frames") for x in names):
                fail("%s: stack does not end at _start, or is truncated: %s" % (kernel, names))
        print("%s: %d launches, %d ns, all under %s" % (kernel, count, ns, " <- ".join(c[0] for c in chain)))


PY_MAX_FRAMES = 64  # bpf/python.h GP_PY_MAX_FRAMES
PY_SHORT = "[truncated: more python frames than copied]"


def check_pythreads(samples, script, n, threads):
    base = "/" + script.rsplit("/", 1)[-1]

    def of(kernel):
        got = [s for s in samples if s[2] and s[2][0][0] == kernel]
        return got, sum(s[1] for s in got)

    got, count = of("py_thr")
    if count != n * threads:
        fail("py_thr: %d launches, want %d" % (count, n * threads))
    for _, _, frames in got:
        names = [f[0] for f in frames]
        py = [f[0] for f in frames if f[1].endswith(base)]
        if py != ["thread_launch", "thread_main"] or "[launched for the main thread]" in names or \
                any(x.startswith("[truncated") or x.startswith("[native frames") for x in names):
            fail("py_thr: not its own thread's frames: %s" % names)
    got, count = of("py_deep")
    if count != n:
        fail("py_deep: %d launches, want %d" % (count, n))
    for _, _, frames in got:
        names = [f[0] for f in frames]
        py = [f for f in frames if f[1].endswith(".py")]
        if len(py) != PY_MAX_FRAMES or any(f[0] != "deep" for f in py) or PY_SHORT not in names:
            fail("py_deep: want %d deep() frames and %r: %s" % (PY_MAX_FRAMES, PY_SHORT, names))
    print("py_thr: %d launches from %d threads, each under its own thread's frames; "
          "py_deep: %d launches, %d Python frames and the note" % (n * threads, threads, n, PY_MAX_FRAMES))


def is_root(name):
    """_start, or glibc's clone/clone3 under any of its names: clone3 from
    .dynsym, __GI___clone3 or __clone3 from libc's debug file (libc6-dbg),
    libc.so.6+0x... where libc has neither."""
    return name == "_start" or name.startswith("libc.so.6+") or \
        re.fullmatch(r"(__GI_)?_*clone3?", name) is not None


def check_chain(samples, kernel, count, chain, max_short=0):
    got = [s for s in samples if s[2] and s[2][0][0] == kernel]
    if sum(s[1] for s in got) != count:
        fail("%s: %d launches, want %d" % (kernel, sum(s[1] for s in got), count))
    short = 0
    for ns, n, frames in got:
        names = [f[0] for f in frames]
        cut = "[truncated: stack copy ended]"
        if cut in names:  # allowed max_short times: the frames before it are the chain's
            mid = names[2:names.index(cut)]
            short += n
            if short > max_short or len(mid) > len(chain) or \
                    any(m not in c.split("|") for m, c in zip(mid, chain)):
                fail("%s: %d stacks ended with the copy (at most %d allowed), or wrong: %s"
                     % (kernel, short, max_short, names), FRAMES_DIFFER)
            continue
        mid = names[2:2 + len(chain)]
        if len(mid) != len(chain) or any(m not in c.split("|") for m, c in zip(mid, chain)):
            fail("%s: frames %s, want %s after the launch API" % (kernel, names, chain), FRAMES_DIFFER)
        if len(names) < 2 or not is_root(names[-2]):
            fail("%s: stack does not end at a root: %s" % (kernel, names), FRAMES_DIFFER)
        if any(x.startswith("[truncated") or x.startswith("[native frames") for x in names):
            fail("%s: truncated: %s" % (kernel, names), FRAMES_DIFFER)
    print("%s: %d launches, each under %s%s" % (kernel, count, " <- ".join(chain),
                                              ", %d ended with the copy" % short if short else ""))


MAIN = "[launched for the main thread]"


def check_split(samples, kernel, want, rooted=True):
    """Each launch of kernel under exactly one of want's frames, want[name]
    launches each, every stack whole (to a root unless not rooted: a frame
    pointer walk ends in libc's start code; nothing short or unknown). A
    launch for the main thread is whole when its own thread's native frames
    reach a root before the main thread's Python frames."""
    got = dict.fromkeys(want, 0)
    for ns, n, frames in samples:
        if not frames or frames[0][0] != kernel:
            continue
        names = [f[0] for f in frames]
        under = [w for w in want if w in names]
        if len(under) != 1:
            fail("%s: %d launches under %s, want one of %s" % (kernel, n, names, list(want)), FRAMES_DIFFER)
        short = ("[truncated", "[native frames", "[stack unknown", "[python:", "[unattributed")
        last = names.index(MAIN) - 1 if MAIN in names else len(names) - 2
        if len(names) < 2 or (rooted and not is_root(names[last])) or \
                any(x.startswith(short) for x in names[1:-1]):
            fail("%s: a stack not whole: %s" % (kernel, names), FRAMES_DIFFER)
        got[under[0]] += n
    if got != want:
        fail("%s: launches by frame %s, want %s" % (kernel, got, want))
    print("%s: %s" % (kernel, ", ".join("%d under %s" % (v, k) for k, v in want.items())))


SHORT = ("[truncated", "[native frames", "[stack unknown", "[python:", "[unattributed")


def whole_part(part, api, frame, last):
    """A part of a stack between markers: it starts at one of the APIs
    (a prefix, or a tuple of them), holds frame, ends at a root (at
    part[last]), and nothing in it says it is short."""
    return bool(part) and part[0].startswith(api) and frame in part and is_root(part[last]) and \
        not any(x.startswith(SHORT) for x in part)


def check_parts(samples, kernel, count, ns_want, marks, parts):
    """Each launch of kernel: its frames cut at the markers (in this order,
    leaf first) into len(marks) + 1 parts, each whole_part's (API, FRAME)
    of parts; the last part's root is before the process's own frame."""
    got_n = got_ns = 0
    for ns, n, frames in samples:
        if not frames or frames[0][0] != kernel:
            continue
        names = [f[0] for f in frames]
        cuts = [names.index(m) if m in names else -1 for m in marks]
        if -1 in cuts or cuts != sorted(cuts):
            fail("%s: %d launches not under %s: %s" % (kernel, n, ", ".join(marks), names), FRAMES_DIFFER)
        bounds = [0] + cuts + [len(names)]
        for k, (api, frame) in enumerate(parts):
            part = names[bounds[k] + 1:bounds[k + 1]]
            if not whole_part(part, api, frame, -2 if k == len(parts) - 1 else -1):
                fail("%s: want %s: %s" % (kernel, " | ".join("%s..%s" % p for p in parts), names),
                     FRAMES_DIFFER)
        got_n += n
        got_ns += ns
    if (got_n, got_ns) != (count, ns_want):
        fail("%s: %d launches for %d ns, want %d for %d" % (kernel, got_n, got_ns, count, ns_want))
    print("%s: %d launches, %d ns, each under %s" %
          (kernel, count, ns_want, ", ".join(p[1] + (", " + m if m else "")
                                             for p, m in zip(parts, marks + [""]))))


def check_under(samples, kernel, count, ns_want, inner, mark, outer_api, outer):
    """Each launch of kernel under an inner stack, then the marker, then an
    outer stack (see the usage: graph and under)."""
    check_parts(samples, kernel, count, ns_want, [mark],
                [(("cuLaunchKernel", "cuGraphAdd"), inner), (outer_api, outer)])


MARK = "[graph captured at]"


def check_graph_under(samples, kernel, count, ns_want, capture, replay, mark, outer_api, outer):
    """Each launch of kernel: its capture, the graph marker, the replay,
    then mark and an outer stack, each part whole to a root."""
    check_parts(samples, kernel, count, ns_want, [MARK, mark],
                [("cuLaunchKernel", capture), ("cuGraphLaunch", replay), (outer_api, outer)])


def main():
    path, mode = sys.argv[1], sys.argv[2]
    samples = parse(path)
    if mode == "python":
        check_python(samples, sys.argv[3], int(sys.argv[4]))
    elif mode == "pythreads":
        check_pythreads(samples, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "chain":
        check_chain(samples, sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    elif mode == "chain-short":
        check_chain(samples, sys.argv[3], int(sys.argv[4]), sys.argv[6:], int(sys.argv[5]))
    elif mode == "graph":  # KERNEL COUNT NS CAPTURE REPLAY
        check_under(samples, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], MARK,
                    "cuGraphLaunch", sys.argv[7])
    elif mode == "graph-under":  # KERNEL COUNT NS CAPTURE REPLAY MARK OUTER_API OUTER
        check_graph_under(samples, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), *sys.argv[6:11])
    elif mode == "under":  # KERNEL COUNT NS INNER MARK OUTER_API OUTER
        check_under(samples, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7],
                    sys.argv[8], sys.argv[9])
    elif mode in ("split", "split-fp"):  # KERNEL NAME=COUNT...
        check_split(samples, sys.argv[3], {a.split("=")[0]: int(a.split("=")[1]) for a in sys.argv[4:]},
                    mode == "split")
    else:
        fail("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
