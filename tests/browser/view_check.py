#!/usr/bin/python3
"""The profile and the timeline, opened in a real browser (Debian's Chromium,
headless, driven through chromedriver by Debian's python3-selenium).

usage: view_check.py PROFILE PROFILE_NS TRACE SPEEDSCOPE_DIR OUTDIR [NAME...]

- pprof's own web UI (`go tool pprof -http`) serves PROFILE: its flame graph
  shows a root of PROFILE_NS ns (the profile's GPU time, to the ns), and a
  box for each NAME (kernels, frames);
- speedscope (SPEEDSCOPE_DIR: its release build, from npm) opens TRACE, the
  --trace timeline: one profile for each track of TRACE that holds slices,
  each named for its process and thread as TRACE's metadata says (every
  track has both; a GPU track is "device D stream S"), each with the time its slices cover, as
  TRACE's own figures give it (to speedscope's rounding), and every track's
  slices nested as a viewer reads them (ts + dur, in doubles);
- OUTDIR gets flamegraph.png and timeline.png (the busiest launching thread).
Prints a line of figures; exits 1 saying what failed.
"""
import functools
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT_S = 120  # a page that is not drawn by then has failed, however slow the machine
UNITS = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
FIGURE = r"[0-9.]+(?:ns|µs|us|ms|s)"
FIGURE_PARTS = r"([0-9.]+)(ns|µs|us|ms|s)"


def fail(msg):
    print("view_check: " + msg, file=sys.stderr)
    sys.exit(1)


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--window-size=1600,1000", "--disable-dev-shm-usage",
              "--enable-unsafe-swiftshader"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def wait_for(d, what, cond):
    try:
        return WebDriverWait(d, WAIT_S, poll_frequency=0.2).until(lambda d: cond(d))
    except TimeoutException:
        text = d.find_element(By.TAG_NAME, "body").text
        fail(f"{what} not shown within {WAIT_S} s; the page says: {text[:600]!r}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- pprof


def check_pprof(d, profile, want_ns, names, outdir):
    port = free_port()
    # A group of its own: `go tool` runs pprof as a child, which must go with it.
    p = subprocess.Popen(["go", "tool", "pprof", "-no_browser", f"-http=127.0.0.1:{port}", profile],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/flamegraph", timeout=30)
                break
            except OSError:
                if p.poll() is not None:
                    fail(f"go tool pprof -http exited {p.returncode}: {p.stderr.read().decode()[:400]}")
                if time.monotonic() > deadline:
                    fail("go tool pprof -http never answered")
                time.sleep(0.2)
        d.get(f"http://127.0.0.1:{port}/ui/flamegraph")
        body = wait_for(d, "pprof's flame graph root",
                        lambda d: re.search(rf"^root \(100%, ({FIGURE})\)$",
                                            d.find_element(By.TAG_NAME, "body").text, re.M))
        root, tol = figure_us(body.group(1))
        if abs(root * 1000 - want_ns) > tol * 1000:
            fail(f"pprof's flame graph shows a root of {body.group(1)}, the profile holds {want_ns} ns")
        text = d.find_element(By.TAG_NAME, "body").text
        boxes = set(re.findall(rf"^(.*) \([0-9.]+%, {FIGURE}\)$", text, re.M))
        missing = [n for n in names if n not in boxes]
        if missing:
            fail(f"no box for {missing} in pprof's flame graph")
        d.save_screenshot(f"{outdir}/flamegraph.png")
        return len(boxes)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


# ---------------------------------------------------------------- speedscope


def union_us(spans):
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def nested(key, spans):
    """Slices on a track must nest as a viewer adds ts + dur, and as speedscope
    does after taking the track's first ts from every ts: one that ends past the
    next's start, inside it, is left open by speedscope to the track's end."""
    first = min(a for a, _, _ in spans)
    nested_as(key, [(a, a + d) for a, d, _ in spans])
    nested_as(key, [((a - first), (a - first) + d) for a, d, _ in spans])


def nested_as(key, spans):
    open_ends = []
    for a, b in sorted(spans, key=lambda s: (s[0], -s[1])):
        while open_ends and open_ends[-1] <= a:
            open_ends.pop()
        if open_ends and b > open_ends[-1]:
            fail(f"track {key}: a slice from {a} to {b} overlaps one that ends at {open_ends[-1]}")
        open_ends.append(b)


def trace_tracks(path):
    """Each (pid, tid) holding slices: its name parts and the time its slices cover, in us."""
    with open(path) as f:
        doc = json.load(f)
    procs, threads, spans = {}, {}, defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "X":
            spans[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["dur"]), e["name"]))
    for k, v in spans.items():
        nested(k, v)
    return {k: (procs.get(k[0]), threads.get(k), union_us([(a, a + d) for a, d, _ in v]), len(v))
            for k, v in spans.items()}



def figure_us(text):
    """A time as a viewer prints it (\"4.40ms\"): in us, and half its last digit."""
    m = re.fullmatch(FIGURE_PARTS, text)
    if not m:
        fail(f"a time shown as {text!r}")
    value, unit = m.group(1), m.group(2)
    decimals = len(value.split(".")[1]) if "." in value else 0
    return float(value) * UNITS[unit], 0.5 * 10 ** -decimals * UNITS[unit]


def serve(app_dir, trace):
    """One origin for the app and the file (speedscope fetches it): /app/... and /trace.json."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            path = path.split("?", 1)[0].split("#", 1)[0]
            if path == "/trace.json":
                return os.path.abspath(trace)
            if path.startswith("/app/"):
                return super().translate_path(path[len("/app"):])
            return os.devnull

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=app_dir))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def check_speedscope(d, trace, speedscope_dir, outdir):
    tracks = trace_tracks(trace)
    srv = serve(speedscope_dir, trace)
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        d.get(f"{base}/app/index.html#profileURL={base}/trace.json")
        sel = wait_for(d, "speedscope's profile selector",
                       lambda d: [e for e in d.find_elements(By.TAG_NAME, "span")
                                  if re.search(r"\(1/\d+\)$", e.text)])
        n = int(re.search(r"\(1/(\d+)\)$", sel[0].text).group(1))
        if n != len(tracks):
            fail(f"speedscope made {n} profiles of the timeline, which has {len(tracks)} tracks with slices")
        sel[0].click()
        rows = wait_for(d, "speedscope's profile list",
                        lambda d: re.findall(rf"^(\d+) (.*) ({FIGURE})$",
                                             d.find_element(By.TAG_NAME, "body").text, re.M) or None)
        if len(rows) != n:
            fail(f"speedscope lists {len(rows)} profiles, not {n}")
        seen, busiest, gpu_us, gpu_slices = set(), None, 0.0, 0
        for idx, name, weight in rows:
            # "PROCESS (pid P), THREAD (tid T)", or "THREAD (pid P, tid T)" for a nameless process
            pids, tid = re.findall(r"\(pid (\d+)", name), re.search(r"tid (\d+)\)$", name)
            if not pids or not tid:
                fail(f"speedscope names a profile {name!r}, with no pid and tid")
            key = (int(pids[-1]), int(tid.group(1)))
            if key not in tracks:
                fail(f"speedscope shows a track {key} the timeline does not hold")
            proc, thread, want, nslices = tracks[key]
            if proc is None or thread is None:
                fail(f"track {key} has no process or thread name in the timeline")
            for part in (proc, thread):
                if part not in name:
                    fail(f"speedscope names track {key} {name!r}, without {part!r}")
            got, tol = figure_us(weight)
            if abs(got - want) > tol + 1e-9 * want:
                fail(f"speedscope shows {weight} for track {key} ({name}), its slices cover {want:.3f} us")
            seen.add(key)
            if thread and thread.startswith("device "):
                gpu_us += want
                gpu_slices += nslices
            elif busiest is None or want > busiest[1]:
                busiest = (idx, want, name)
        if seen != set(tracks):
            fail(f"speedscope shows no profile for {sorted(set(tracks) - seen)}")
        if busiest:
            row = [e for e in d.find_elements(By.XPATH, "//*[text()]") if e.text.strip() == busiest[2]]
            if not row:
                fail(f"no row of speedscope's list to click for {busiest[2]!r}")
            row[0].click()
            wait_for(d, "the busiest thread's flame chart",
                     lambda d: [e for e in d.find_elements(By.TAG_NAME, "span")
                                if e.text.endswith(f"({busiest[0]}/{n})")])
        d.save_screenshot(f"{outdir}/timeline.png")
        return n, gpu_us, gpu_slices
    finally:
        srv.shutdown()


def main():
    args = sys.argv[1:]
    if len(args) < 5:
        fail("usage: view_check.py PROFILE PROFILE_NS TRACE SPEEDSCOPE_DIR OUTDIR [NAME...]")
    profile, want_ns, trace, speedscope_dir, outdir = args[:5]
    d = browser()
    try:
        boxes = check_pprof(d, profile, int(want_ns), args[5:], outdir)
        n, gpu_us, gpu_slices = check_speedscope(d, trace, speedscope_dir, outdir)
    finally:
        d.quit()
    print(f"view_check: pprof flame graph root {want_ns} ns, {boxes} boxes; speedscope {n} tracks, "
          f"GPU tracks covering {gpu_us:.3f} us in {gpu_slices} slices; screenshots in {outdir}")


if __name__ == "__main__":
    main()
