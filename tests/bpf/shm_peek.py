#!/usr/bin/env python3
"""Reads the producer half of a process's shim ring header (shim/gp_abi.h)
without claiming the ring, as a second reader never may: through
/proc/PID/map_files (root). Prints one line:

  flags=F recording=0|1 records=N dropped=N on=N off=N recording_on=N recording_off=N

  shm_peek.py PID
  shm_peek.py PID pause 0|1   sets the reader's record_pause instead (as a
                              duty cycle's loader does between windows)
  shm_peek.py PID windows N   N windows: pause, wait until the shim stopped
                              recording, resume, wait until it records again
                              (10 s each at most: exits 1 saying which)
"""
import os
import struct
import sys
import time

PRODUCER = 128           # struct gp_shm_producer, after the 128-byte layout
FLAGS = PRODUCER + 24
RECORD_ON = PRODUCER + 48
COUNTERS = PRODUCER + 64
F_RECORDING = 1 << 3
CTR = {"records": 3, "dropped": 4, "recording_on": 11, "recording_off": 12}
RECORD_PAUSE = 320 + 40  # gp_shm_consumer.record_pause


def ring_path(pid):
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            if "/memfd:gpuprobe-shm" in line:
                start, end = line.split()[0].split("-")
                return f"/proc/{pid}/map_files/{start}-{end}"
    raise SystemExit(f"pid {pid}: no gpuprobe-shm mapping")


def windows(path, n):
    fd = os.open(path, os.O_RDWR)

    def recording():
        return bool(struct.unpack("<I", os.pread(fd, 4, FLAGS))[0] & F_RECORDING)

    def wait(want, what):
        end = time.monotonic() + 10
        while recording() != want:
            if time.monotonic() > end:
                raise SystemExit(f"window {i}: {what} after 10 s")
            time.sleep(0.002)

    for i in range(1, n + 1):
        os.pwrite(fd, struct.pack("<I", 1), RECORD_PAUSE)
        wait(False, "still recording, paused")
        os.pwrite(fd, struct.pack("<I", 0), RECORD_PAUSE)
        wait(True, "not recording, resumed")
    print(f"windows={n}")


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "windows":
        return windows(ring_path(int(sys.argv[1])), int(sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[2] == "pause":
        with open(ring_path(int(sys.argv[1])), "r+b", buffering=0) as f:
            f.seek(RECORD_PAUSE)
            f.write(struct.pack("<I", int(sys.argv[3])))
        return
    with open(ring_path(int(sys.argv[1])), "rb") as f:
        hdr = f.read(4096)
    if struct.unpack_from("<I", hdr, 0)[0] != 0x42525047:
        raise SystemExit("bad magic")
    flags = struct.unpack_from("<I", hdr, FLAGS)[0]
    on, off = struct.unpack_from("<QQ", hdr, RECORD_ON)
    ctr = {k: struct.unpack_from("<Q", hdr, COUNTERS + 8 * i)[0] for k, i in CTR.items()}
    print(f"flags={flags} recording={int(bool(flags & F_RECORDING))} records={ctr['records']} "
          f"dropped={ctr['dropped']} on={on} off={off} recording_on={ctr['recording_on']} "
          f"recording_off={ctr['recording_off']}")


if __name__ == "__main__":
    main()
