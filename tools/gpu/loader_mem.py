#!/usr/bin/env python3
"""The loader's resident memory by kind, from one /proc/PID/smaps snapshot,
and the memory figures of its last `loader:` line.

  loader_mem.py SMAPS [LOADER_LOG]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loader_line  # noqa: E402


def kind(name):
    if name.startswith("anon_inode:bpf"):  # bpf-map (the ring), bpf-prog
        return "bpf maps (ring)"
    if name.startswith("/dev/shm") or name.startswith("/memfd:"):
        return "shim ring (shared)"
    if name == "[heap]":
        return "heap"
    if name.startswith("[stack") or name == "":
        return "anonymous"
    if name.startswith("["):
        return "other"
    return "files"


def main():
    rss, name = {}, ""
    for line in open(sys.argv[1]):
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if m:
            name = m.group(1).strip()
            continue
        m = re.match(r"^Rss:\s+(\d+) kB", line)
        if m:
            k = kind(name)
            rss[k] = rss.get(k, 0) + int(m.group(1))
    total = sum(rss.values())
    print("  RSS at the highest sample: %.1f MB" % (total / 1024))
    for k, v in sorted(rss.items(), key=lambda kv: -kv[1]):
        print("    %-20s %7.1f MB" % (k, v / 1024))
    kv = loader_line.last(sys.argv[2]) if len(sys.argv) > 2 else None
    if kv:
        keep = ("max_rss_mb", "queue_peak_mb", "queue_mb", "syms_mb", "cfi_mb", "cpu_share",
                "cpu_s", "wall_s", "helper_rss_mb", "cache_keys")
        print("  loader: " + " ".join("%s=%g" % (k, kv[k]) for k in keep if k in kv))

if __name__ == "__main__":
    main()
