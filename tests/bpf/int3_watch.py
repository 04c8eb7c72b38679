#!/usr/bin/env python3
"""Watches one instruction of a target while a duty-cycled loader runs.

A uprobe is an int3 (0xcc) written over the probed instruction in the
target's own copy of the page, which /proc/PID/mem shows. Between duty
windows the launch probes are detached, so the byte is the original one;
inside a window it is 0xcc. Probes that stay attached and only go inert
(a BPF flag) keep the 0xcc in the gaps.

usage: int3_watch.py PID ADDR LOG LOADER_PID
  ADDR: the instruction's address in PID (hex or decimal).
  LOG: the loader's -v log; its "duty: window open/closed at" lines say
       where each sample fell. Samples during which a line was written
       are thrown away (the state moved under them).
Prints "in_cc=N in_other=N out_cc=N out_other=N" when the loader exits.
"""
import os
import sys
import time


def edges(log):
    try:
        with open(log, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return (text.count("duty: window open at "), text.count("duty: window closed at "))


def running(pid):
    """Whether pid is there and not a zombie: it may go between any two reads."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def main():
    pid, addr, log, loader = int(sys.argv[1]), int(sys.argv[2], 0), sys.argv[3], int(sys.argv[4])
    counts = {"in_cc": 0, "in_other": 0, "out_cc": 0, "out_other": 0}
    mem = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    while running(loader):
        before = edges(log)
        try:
            byte = os.pread(mem, 1, addr)
        except OSError:
            break
        after = edges(log)
        if before is not None and before == after:
            state = "in" if before[0] > before[1] else "out"
            counts[state + ("_cc" if byte == b"\xcc" else "_other")] += 1
        time.sleep(0.01)
    print(" ".join("%s=%d" % kv for kv in counts.items()))


if __name__ == "__main__":
    main()
