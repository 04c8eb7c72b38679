#!/usr/bin/env python3
"""Completeness against torch.profiler: per kernel, our launch counts (samples
under the script's train_step frame, from a gpuprobe-bpf profile) against
torch.profiler's (tools/gpu/train.py's TORCH_PROFILE JSON of the same steps
in another run of the same deterministic script); total GPU time too.

  tools/completeness.py PROFILE.pb.gz TORCHPROF.json [FUNCTION]
Exit status 0 when every kernel's count is equal.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "bpf"))
from stack_check import parse  # noqa: E402


def main():
    prof, ref_path = sys.argv[1], sys.argv[2]
    func = sys.argv[3] if len(sys.argv) > 3 else "train_step"
    ours = {}
    for ns, n, frames in parse(prof):
        if not frames or frames[0][0].startswith("[") or not any(f[0] == func for f in frames):
            continue  # copies and memsets ([memcpy ...]) and work outside the steps
        c = ours.setdefault(frames[0][0], [0, 0])
        c[0] += n
        c[1] += ns
    ref = {k: v for k, v in json.load(open(ref_path)).items()
           if not k.startswith("Memcpy") and not k.startswith("Memset")}
    names = sorted(set(ours) | set(ref), key=lambda k: -ref.get(k, [0, 0])[1])
    bad = 0
    for k in names:
        a, b = ours.get(k, [0, 0])[0], ref.get(k, [0, 0])[0]
        if a != b:
            bad += 1
            print("  differs: ours %6d  torch.profiler %6d  %s" % (a, b, k[:110]))
    t_ours = sum(v[1] for v in ours.values()) / 1e3
    t_ref = sum(v[1] for v in ref.values())
    print("kernels: %d names, %d differ; launches ours %d, torch.profiler %d; "
          "GPU time ours %.1f us, torch.profiler %.1f us (%+.2f%%)" %
          (len(names), bad, sum(v[0] for v in ours.values()), sum(v[0] for v in ref.values()),
           t_ours, t_ref, 100.0 * (t_ours - t_ref) / t_ref if t_ref else 0.0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
