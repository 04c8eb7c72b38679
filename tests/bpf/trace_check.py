#!/usr/bin/env python3
"""Checks a --trace timeline (trace-event JSON) against its run's profile.

usage: trace_check.py TRACE PROFILE FRAME...
- it is JSON, and every name in it ASCII;
- each launch call ("launch" slice) sits on its thread's track inside the
  slices of its stack, root outermost, each spanning the call exactly;
- each GPU activity is a slice on its process's GPU track; each whose call
  is kept has one arrow of its own ("s" at its launch call, "f" at it);
- the launch calls and activities kept are what the otherData says, and,
  with nothing over the limits, as many as the profile's joined launches and
  activities, per kernel name, with the same GPU time (within a ns a slice:
  the timeline's times are steps of 1/1024 us);
- each FRAME named is in some launch call's stack.
Prints a line of figures; exits 1 saying what failed.
"""
import json
import subprocess
import sys
from collections import Counter, defaultdict


def fail(msg):
    print("trace_check: " + msg, file=sys.stderr)
    sys.exit(1)


def ns(us):
    return round(float(us) * 1000)


def main():
    path, profile, frames = sys.argv[1], sys.argv[2], sys.argv[3:]
    raw = open(path, "rb").read()
    if any(b >= 0x80 for b in raw):
        fail("bytes outside ASCII")
    doc = json.loads(raw)
    ev, other = doc["traceEvents"], doc["otherData"]
    by_track = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            by_track[(e["pid"], e["tid"])].append(e)
    calls, gpu, seen_frames = [], [], set()
    for track, xs in by_track.items():
        stack = []
        for e in xs:
            if e["cat"] == "stack":
                if stack and (stack[-1]["ts"], stack[-1]["dur"]) != (e["ts"], e["dur"]):
                    fail("a stack slice that does not span its call: %r after %r" % (e, stack[-1]))
                stack.append(e)
            elif e["cat"] == "launch":
                if stack and (stack[-1]["ts"], stack[-1]["dur"]) != (e["ts"], e["dur"]):
                    fail("a launch call outside its stack's slices: %r" % e)
                seen_frames.update(s["name"] for s in stack)
                calls.append((e, len(stack)))
                stack = []
            elif e["cat"] == "gpu":
                if e["pid"] < 0x40000000:
                    fail("a GPU activity on a CPU track: %r" % e)
                gpu.append(e)
        if stack:
            fail("stack slices with no launch call under them on %r" % (track,))
    if len(calls) != other["launches"] or len(gpu) != other["activities"]:
        fail("%d calls and %d activities, otherData says %r" % (len(calls), len(gpu), other))
    starts = Counter(e["id"] for e in ev if e["ph"] == "s")
    ends = Counter(e["id"] for e in ev if e["ph"] == "f")
    joined = [e for e in gpu if "launch" not in e.get("args", {})]
    if any(c != 1 for c in starts.values()) or any(c != 1 for c in ends.values()):
        fail("an arrow id used twice")
    if set(starts) != set(ends) or len(ends) != len(joined):
        fail("%d activities with a kept call, %d arrows ending, %d starting: not one each" %
             (len(joined), len(ends), len(starts)))
    call_at = {(e["pid"], e["tid"], e["ts"]) for e, _ in calls}
    if any((e["pid"], e["tid"], e["ts"]) not in call_at for e in ev if e["ph"] == "s"):
        fail("an arrow that starts where no launch call does")
    if other["launches_not_kept"] == 0 and other["activities_not_kept"] == 0:
        out = subprocess.run([sys.executable, __file__.replace("trace_check.py", "profile_check.py"),
                              profile, "totals"], capture_output=True, text=True, check=True).stdout
        want_n, want_ns = Counter(), Counter()
        for line in out.splitlines():
            f = line.split()
            if not line.startswith("["):  # joined samples only
                want_n[" ".join(f[1:-2])] += int(f[-1])
                want_ns[" ".join(f[1:-2])] += int(f[-2])
        got_n, got_ns = Counter(), Counter()
        for e in joined:
            got_n[e["name"]] += 1
            got_ns[e["name"]] += ns(e["dur"])
        # Each slice's ends are rounded to 1/1024 us (half a ns): a ns a slice.
        if got_n != want_n or any(abs(got_ns[k] - want_ns[k]) > got_n[k] for k in want_ns):
            fail("per kernel: trace %r %r, profile %r %r" % (got_n, got_ns, want_n, want_ns))
    missing = [f for f in frames if f not in seen_frames]
    if missing:
        fail("frames never in a launch call's stack: %r (seen: %r)" % (missing, sorted(seen_frames)[:40]))
    print("trace_check: %d launch calls (stacks of %d-%d frames), %d GPU activities, %d arrows, %d events" %
          (len(calls), min(d for _, d in calls) if calls else 0, max(d for _, d in calls) if calls else 0,
           len(gpu), len(ends), len(ev)))


if __name__ == "__main__":
    main()
