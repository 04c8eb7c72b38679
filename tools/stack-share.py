#!/usr/bin/env python3
"""How much of a profile's GPU time sits under stacks that reach a given
Python file, and how much under stacks marked short, read through
`go tool pprof -raw`.

  tools/stack-share.py PROFILE.pb.gz SCRIPT_BASENAME [N]
prints the shares and the N heaviest stacks that do not reach the script.
"""
import collections
import sys

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "tests", "bpf"))
from stack_check import parse  # noqa: E402


def main():
    path, script = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    samples = parse(path)
    total = sum(s[0] for s in samples)
    reach = short = main_thread = 0
    missing, reasons = collections.Counter(), collections.Counter()
    for ns, n, frames in samples:
        names = [f[0] for f in frames]
        if any(f[1].endswith("/" + script) for f in frames):
            reach += ns
        else:
            missing[" <- ".join(names[:3] + ["..."] + names[-4:])] += ns
        marks = [x for x in names if x.startswith("[truncated") or x.startswith("[native frames")]
        if marks:
            short += ns
            for m in marks:
                # the frame before the mark: where the walk stopped
                i = names.index(m)
                reasons["%s after %s" % (m, names[i - 1].split("+")[0] if i else "?")] += ns
        if "[launched for the main thread]" in names:
            main_thread += ns
    print("gpu_ns=%d reach_%s=%.2f%% short=%.3f%% via_main_thread=%.2f%%" %
          (total, script, 100.0 * reach / total, 100.0 * short / total, 100.0 * main_thread / total))
    for why, ns in reasons.most_common(top):
        print("  short %5.2f%%  %s" % (100.0 * ns / total, why))
    for stack, ns in missing.most_common(top):
        print("  %5.2f%%  %s" % (100.0 * ns / total, stack))


if __name__ == "__main__":
    main()
