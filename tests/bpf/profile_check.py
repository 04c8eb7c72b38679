#!/usr/bin/env python3
"""Reads a gpuprobe profile through `go tool pprof -raw` (the independent
reader) and prints or checks per-(site, activity) totals.

  profile_check.py FILE totals            print "site kernel ns count" lines
  profile_check.py FILE launcher T N      exact check against launcher's formula
  profile_check.py FILE pids              print "pid comm cgroup count" lines
"""
import subprocess
import sys


def read_raw(path):
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True,
                         capture_output=True, text=True).stdout
    samples, locs, section, cur = [], {}, None, None
    for line in out.splitlines():
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locs"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "samples":
            if ":" in line and line.strip()[0].isdigit() and ": " in line and "[" not in line:
                vals, ids = line.split(":", 1)
                v = [int(x) for x in vals.split()]
                cur = {"ns": v[0], "count": v[1], "locs": [int(x) for x in ids.split()], "labels": {}}
                samples.append(cur)
            elif cur is not None and "[" in line:
                for tok in line.split():
                    if ":[" in tok:
                        k, v = tok.split(":[", 1)
                        cur["labels"][k] = v.rstrip("]")
        elif section == "locs" and ":" in line:
            # "  3: 0x36ee M=1 site_a /path/file:0 s=0"; names may hold spaces
            num, rest = line.split(":", 1)
            parts = rest.split()
            if parts and parts[-1].startswith("s="):
                parts = parts[:-1]
            parts = parts[1:]  # the address
            if parts and parts[0].startswith("M="):
                parts = parts[1:]
            locs[int(num)] = " ".join(parts[:-1])  # the last token is FILE:LINE
    for s in samples:
        s["frames"] = [locs.get(i, "?") for i in s["locs"]]
    return samples


def site_of(frames):
    for f in frames:
        if f.startswith("site_") or f.endswith("_site"):
            return f
        if f.startswith("[unattributed"):
            return f
    return "?"


def totals(samples):
    t = {}
    for s in samples:
        key = (site_of(s["frames"]), s["frames"][0])
        ns, c = t.get(key, (0, 0))
        t[key] = (ns + s["ns"], c + s["count"])
    return t


def expected_launcher(T, N):
    L = T * N
    e = {("site_a", "gemm"): (3000 * L, L), ("site_b", "softmax"): (5000 * L, L),
         ("site_c", "graph_k1"): (2000 * L, L), ("site_c", "graph_k2"): (4000 * L, L),
         ("site_d", "lib_scale"): (7000 * L, L), ("site_e", "dup_relu"): (1000 * L, L),
         ("site_f", "dup_relu"): (1000 * L, L),
         ("site_copy", "[memcpy HtoD]"): (4 * T, T), ("site_copy", "[memcpy DtoH]"): (4 * T, T),
         ("site_copy", "[memset]"): (3 * T, T)}
    return e


def main():
    path, mode = sys.argv[1], sys.argv[2]
    samples = read_raw(path)
    if mode == "totals":
        for (site, k), (ns, c) in sorted(totals(samples).items()):
            print(site, k, ns, c)
        return 0
    if mode == "pids":
        seen = {}
        for s in samples:
            key = (s["labels"].get("pid"), s["labels"].get("comm"), s["labels"].get("cgroup", "-"))
            seen[key] = seen.get(key, 0) + s["count"]
        for (pid, comm, cg), c in sorted(seen.items()):
            print(pid, comm, cg, c)
        return 0
    if mode == "launcher":
        T, N = int(sys.argv[3]), int(sys.argv[4])
        got, want = totals(samples), expected_launcher(T, N)
        bad = 0
        for key in sorted(set(got) | set(want)):
            if got.get(key) != want.get(key):
                print("MISMATCH %s %s: got %s want %s" % (key[0], key[1], got.get(key), want.get(key)))
                bad += 1
        if bad:
            return 1
        print("profile matches launcher -t %d -n %d exactly: %d (site, activity) pairs, "
              "0 unattributed" % (T, N, len(want)))
        return 0
    print("unknown mode", mode, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
