#!/usr/bin/env python3
"""Where a profile's CUDA-graph replays went: the GPU time of the kernels a
graph ran (those with a `graph` label) under their capture-time stack (a
"[graph captured at]" frame), and, of those, the Python function of the
capture-time stack nearest the kernel in each of the N heaviest groups
(for a model: the layer's forward that launched it), read through
`go tool pprof -raw`.

  tools/graph-share.py PROFILE.pb.gz [N]
"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "bpf"))
from profile_check import parse_raw  # noqa: E402

MARK = "[graph captured at]"


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    graph_ns = under = launches = 0
    by_fn = collections.Counter()
    for s in parse_raw(path)[0]:
        if "graph" not in s.get("labels", {}):
            continue
        graph_ns += s["ns"]
        launches += s["count"]
        names = [f[0] for f in s["where"]]
        if MARK not in names:
            continue
        under += s["ns"]
        # the capture-time frames, leaf first: the first one in a .py file
        cap = s["where"][1:names.index(MARK)]
        py = next(("%s (%s:%s)" % (f[0], os.path.basename(f[1]), f[2]) for f in cap
                   if f[1].endswith(".py")), "(no Python frame)")
        by_fn[py] += s["ns"]
    if not graph_ns:
        print("graph_ns=0: no kernel ran by a graph")
        return
    print("graph_ns=%d graph_launches=%d under_capture=%.2f%%" % (graph_ns, launches, 100.0 * under / graph_ns))
    for fn, ns in by_fn.most_common(top):
        print("  %6.2f%%  %s" % (100.0 * ns / graph_ns, fn))


if __name__ == "__main__":
    main()
