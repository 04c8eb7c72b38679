#!/usr/bin/env python3
"""Samples a duty-cycled loader between two of its windows.

usage: gap_sample.py RING_PID LOADER_PID OUT
Reads one line from stdin, then takes 5 samples of the loader, each in a
gap between windows (a different gap each time where it can): the ring of
RING_PID was paused by the loader just before the sample and still is just
after it (the loader pauses a ring only once the window's probes are gone,
and lets it record again before it makes them anew: shim/gp_abi.h). The
sample with the fewest fds is written to OUT: "fds N", "maps N", "rss_kb N",
then one "fd TARGET" line per fd (not the /proc files the loader opens for
a moment at each tick), then one "rss RANGE NAME KB" line per mapping (its
resident KiB: which one grew, when the total did). Exits 1 when the loader
ends first.
"""
import os
import sys
import time

RECORD_PAUSE = 320 + 40  # gp_shm_consumer.record_pause (shm_peek.py)


def ring_fd(pid):
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            if "/memfd:gpuprobe-shm" in line:
                return os.open(f"/proc/{pid}/map_files/{line.split()[0]}", os.O_RDONLY)
    raise SystemExit(f"pid {pid}: no gpuprobe-shm mapping")


def paused(fd):
    return int.from_bytes(os.pread(fd, 4, RECORD_PAUSE), "little") == 1


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def take(pid):
    fds = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if not target.startswith("/proc/"):
            fds.append(target.split("[")[0] if target.startswith(("pipe:", "socket:")) else target)
    with open(f"/proc/{pid}/maps") as f:
        maps = sum(1 for _ in f)
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return sorted(fds), maps, rss, mapping_rss(pid)


def mapping_rss(pid):
    """["RANGE NAME KB", ...]: each mapping's resident KiB, from smaps."""
    out, head = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and not parts[0].endswith(":"):
                head = "%s %s" % (parts[0], parts[5] if len(parts) > 5 else "[anon]")
            elif parts and parts[0] == "Rss:" and head:
                out.append("%s %s" % (head, parts[1]))
    return out


def main():
    ring, loader, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sys.stdin.readline()
    fd = ring_fd(ring)
    best = None
    for _ in range(5):
        got = None
        while got is None:
            if not running(loader):
                raise SystemExit("the loader ended before a sample between two windows")
            if paused(fd):
                s = take(loader)
                if paused(fd):
                    got = s
                    continue
            time.sleep(0.002)
        if best is None or len(got[0]) < len(best[0]):
            best = got
        while paused(fd) and running(loader):  # the next sample in the next gap
            time.sleep(0.002)
    with open(out, "w") as f:
        f.write(f"fds {len(best[0])}\nmaps {best[1]}\nrss_kb {best[2]}\n")
        f.writelines(f"fd {t}\n" for t in best[0])
        f.writelines(f"rss {m}\n" for m in best[3])


if __name__ == "__main__":
    main()
