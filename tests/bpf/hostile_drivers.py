#!/usr/bin/env python3
"""hostile_drivers DIR FILE N: maps N copies of FILE, each its own inode
named DIR/dK/libcuda.so.1, executable (as a process that loaded them would),
so that a loader scanning every process finds N distinct "libcuda.so.1"
files in it. Prints "hostile_drivers: ready pid=PID"; on SIGUSR1 unmaps them
all ("hostile_drivers: unmapped"); exits on SIGTERM."""
import mmap, os, shutil, signal, sys, time

d, src, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
maps = []
for k in range(n):
    os.makedirs(f"{d}/d{k}", exist_ok=True)
    path = f"{d}/d{k}/libcuda.so.1"
    shutil.copyfile(src, path)
    with open(path, "rb") as f:
        maps.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                              prot=mmap.PROT_READ | mmap.PROT_EXEC))
state = {"unmap": False, "stop": False}
signal.signal(signal.SIGUSR1, lambda *a: state.update(unmap=True))
signal.signal(signal.SIGTERM, lambda *a: state.update(stop=True))
print(f"hostile_drivers: ready pid={os.getpid()}", flush=True)
while not state["stop"]:
    if state["unmap"] and maps:
        for m in maps:
            m.close()
        maps = []
        print("hostile_drivers: unmapped", flush=True)
    time.sleep(0.02)
