#!/usr/bin/env python3
"""Runs a command as a child subreaper, so the exit status of a grandchild
orphaned when its parent (a loader in -- COMMAND mode) exits early can still
be read; optionally signals the command after a delay.

  subreaper.py OUT SIGNAL DELAY CMD [ARGS...]

SIGNAL: a name (INT, TERM...) or 0 for none; it goes to CMD only, DELAY
seconds after it started. CMD's pid is written to OUT.pid at once, so the
caller can signal it itself. Every process reaped is written to OUT as
"PID STATUS SECONDS" (STATUS: exit code, or 128+signal; SECONDS: the
monotonic clock at the exit, comparable between subreapers of one boot and
never stepped), CMD first. Exits 0 once every descendant is gone.
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def status_of(st):
    return os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)


def main():
    out, sig, delay, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        print("subreaper: prctl failed", file=sys.stderr)
        return 2
    pid = os.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    with open(out + ".pid", "w") as f:
        f.write("%d\n" % pid)
    lines = []
    if sig != "0":
        time.sleep(delay)
        os.kill(pid, getattr(signal, "SIG" + sig))
    while True:
        try:
            p, st = os.wait()
        except ChildProcessError:
            break
        line = "%d %d %.3f" % (p, status_of(st), time.monotonic())
        if p == pid:
            lines.insert(0, line)
        else:
            lines.append(line)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
