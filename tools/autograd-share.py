#!/usr/bin/env python3
"""How a profile's GPU time splits among Python functions of a script, for
backward passes run by PyTorch's autograd engine thread (issue 22):

  tools/autograd-share.py PROFILE.pb.gz SCRIPT_BASENAME FUNC...

prints, for each FUNC, the share of GPU time whose stack has a frame of
FUNC in SCRIPT; the share under none of them and under more than one; the
share under "[autograd thread for tid N]" markers (by tid); and the
heaviest stacks under none.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "bpf"))
from stack_check import parse  # noqa: E402


def main():
    path, script, funcs = sys.argv[1], sys.argv[2], sys.argv[3:]
    samples = parse(path)
    total = sum(s[0] for s in samples) or 1
    under = collections.Counter()
    marks = collections.Counter()
    none, several = collections.Counter(), 0
    for ns, _, frames in samples:
        hit = {f[0] for f in frames if f[0] in funcs and f[1].endswith("/" + script)}
        for name in hit:
            under[name] += ns
        if len(hit) > 1:
            several += ns
        if not hit:
            none[" <- ".join([f[0] for f in frames][:3] + ["..."] + [f[0] for f in frames][-3:])] += ns
        for f in frames:
            if f[0].startswith("[autograd thread for tid"):
                marks[f[0]] += ns
    print("gpu_ns=%d" % total)
    for name in funcs:
        print("  under %-14s %6.2f%%" % (name, 100.0 * under[name] / total))
    print("  under none          %6.2f%%" % (100.0 * sum(none.values()) / total))
    print("  under several       %6.2f%%" % (100.0 * several / total))
    for m, ns in marks.most_common():
        print("  %s %6.2f%%" % (m, 100.0 * ns / total))
    for stack, ns in none.most_common(5):
        print("    %6.2f%%  %s" % (100.0 * ns / total, stack[:300]))


if __name__ == "__main__":
    main()
