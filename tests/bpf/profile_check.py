#!/usr/bin/env python3
"""Reads a gpuprobe profile through `go tool pprof -raw` (the independent
reader) and prints or checks per-(site, activity) totals.

  profile_check.py FILE totals [PID]      print "site kernel ns count" lines (of PID only)
  profile_check.py FILE launcher T N      exact check against launcher's formula
  profile_check.py FILE pc-launcher T N   PC samples (--pc-sampling) checked the same way
  profile_check.py FILE pids              print "pid comm cgroup count" lines
  profile_check.py FILE cubins DIR KIND   every kernel's leaf location lies in the
                                          mapping of the cubin (dumped by the stub
                                          driver into DIR as PID-ID.cubin) defining
                                          it, whose build id is that cubin's CRC;
                                          KIND: crc32c (the stub CUPTI's
                                          cuptiGetCubinCrc) or fallback (the
                                          loader's own: zlib CRC-32 | 1 << 63)
"""
import os
import re
import struct
import subprocess
import sys
import zlib


# "1: 0x1000/0x9000/0x0 FILE BUILDID [FN]": FILE may hold spaces, BUILDID be empty.
MAPPING_RE = re.compile(r"^\s*(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (.*) (\S*) ((?:\[\w+\])*)$")


def parse_raw(path):
    """Samples (each with "frames": names, and "where": (name, file, line), leaf first),
    {loc id: (mapping id, address)}, {mapping id: (start, limit, file, build id)}."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True,
                         capture_output=True, text=True).stdout
    samples, locs, where, section, cur = [], {}, {}, None, None
    locinfo, mappings = {}, {}
    for line in out.splitlines():
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locs"
            continue
        if line.startswith("Mappings"):
            section = "maps"
            continue
        if section == "maps":
            m = MAPPING_RE.match(line)
            if m:
                mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16),
                                             m.group(5), m.group(6))
            continue
        if section == "samples":
            if ":" in line and line.strip()[0].isdigit() and ": " in line and "[" not in line:
                vals, ids = line.split(":", 1)
                v = [int(x) for x in vals.split()]
                cur = {"ns": v[0], "count": v[1], "pc": v[2] if len(v) > 2 else 0,
                       "locs": [int(x) for x in ids.split()], "labels": {}}
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
            addr, parts = int(parts[0], 16), parts[1:]
            mapping = 0
            if parts and parts[0].startswith("M="):
                mapping, parts = int(parts[0][2:]), parts[1:]
            locs[int(num)] = " ".join(parts[:-1])  # the last token is FILE:LINE
            file, _, lineno = parts[-1].rpartition(":") if parts else ("", "", "0")
            where[int(num)] = (locs[int(num)], file, int(lineno) if lineno.isdigit() else 0)
            locinfo[int(num)] = (mapping, addr)
    for s in samples:
        s["frames"] = [locs.get(i, "?") for i in s["locs"]]
        s["where"] = [where.get(i, ("?", "", 0)) for i in s["locs"]]
    return samples, locinfo, mappings


def read_raw(path):
    return parse_raw(path)[0]


# ------------------------------------------------------------ cubins

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def cubin_crc(data, kind):
    if kind == "crc32c":
        return crc32c(data)
    if kind == "fallback":
        return (1 << 63) | zlib.crc32(data)
    raise SystemExit("unknown CRC kind %s" % kind)


def elf_func_names(data):
    """Defined STT_FUNC symbol names of an ELF64 LE image (a trusted test cubin)."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for (_, typ, _, _, off, size, link, _, _, entsize) in shdrs:
        if typ != 2:  # SHT_SYMTAB
            continue
        stroff = shdrs[link][4]
        for i in range(size // entsize):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, off + i * entsize)
            if st_info & 0xF == 2 and st_shndx != 0 and st_name:  # STT_FUNC, defined
                end = data.index(b"\0", stroff + st_name)
                names.add(data[stroff + st_name:end].decode())
    return names


def check_cubins(samples, locinfo, mappings, dump_dir, kind):
    """0 when every kernel sample's leaf sits in the mapping of its cubin."""
    defined = {}  # (pid, kernel name) -> {CRC hex}
    for f in sorted(os.listdir(dump_dir)):
        pid = f.split("-", 1)[0]
        data = open(os.path.join(dump_dir, f), "rb").read()
        crc = "%016x" % cubin_crc(data, kind)
        for name in elf_func_names(data):
            defined.setdefault((pid, name), set()).add(crc)
    if not defined:
        print("no cubins dumped in %s" % dump_dir)
        return 1
    bad, checked, used = 0, 0, {}
    for s in samples:
        name = s["frames"][0]
        if name.startswith("["):
            continue  # copies and memsets live in no cubin
        checked += 1
        crcs = defined.get((s["labels"].get("pid"), name))
        mapping, addr = locinfo.get(s["locs"][0], (0, 0))
        m = mappings.get(mapping)
        if not crcs or len(crcs) != 1:
            print("BAD %s: defined by cubins %s of its process, want exactly one" % (name, crcs))
            bad += 1
        elif not m or not m[2].startswith("[cubin ") or m[3] != next(iter(crcs)):
            print("BAD %s: leaf in mapping %s %s, want the cubin with build id %s" %
                  (name, mapping, m, next(iter(crcs))))
            bad += 1
        elif not m[0] <= addr < m[1]:
            print("BAD %s: address %#x outside its mapping %#x-%#x" % (name, addr, m[0], m[1]))
            bad += 1
        else:
            used.setdefault(m[3], set()).add(addr)
    spans = sorted((m[0], m[1]) for m in mappings.values() if m[2].startswith("[cubin "))
    for a, b in zip(spans, spans[1:]):
        if a[1] > b[0]:
            print("BAD cubin mappings overlap: %#x-%#x and %#x-%#x" % (a + b))
            bad += 1
    if not checked:
        print("no kernel samples")
        return 1
    if bad:
        return 1
    print("%d kernel samples: each leaf in the mapping of its cubin (%d cubins, build id = %s CRC)" %
          (checked, len(used), kind))
    return 0


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
        if not s["ns"] and not s["count"]:
            continue  # PC sampling's: pc_totals()
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


def pc_totals(samples):
    """{(site, instruction, stall): PC samples}, and the PC samples whose instruction
    is not in the mapping of the kernel under it, at the address its offset gives."""
    t, misplaced = {}, []
    for s in samples:
        if not s["pc"]:
            continue
        key = (site_of(s["frames"]), s["frames"][0], s["labels"].get("stall"))
        t[key] = t.get(key, 0) + s["pc"]
        (imap, iaddr), (kmap, _) = s["locinfo"][0], s["locinfo"][1]
        off = int(s["frames"][0].rsplit("+", 1)[1], 16)
        if not imap or imap != kmap or (iaddr - s["map_start"][0] - (1 << 45)) % (1 << 24) != off:
            misplaced.append(s["frames"][0])
    return t, misplaced


def expected_launcher_pc(T, N):
    """The stub's PC samples (stub/cupti/pcsampling.c): per launch of a kernel of grid g,
    g long_scoreboard and 1 selected at +0x40, g wait at +0x80."""
    L = T * N
    e = {}
    for site, k, g in (("site_a", "gemm", 3), ("site_b", "softmax", 5), ("site_c", "graph_k1", 2),
                       ("site_c", "graph_k2", 4), ("site_d", "lib_scale", 7),
                       ("site_e", "dup_relu", 1), ("site_f", "dup_relu", 1)):
        e[(site, k + "+0x40", "long_scoreboard")] = g * L
        e[(site, k + "+0x40", "selected")] = L
        e[(site, k + "+0x80", "wait")] = g * L
    return e


def mismatches(got, want):
    """Prints each key whose value differs; how many did."""
    bad = 0
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            print("MISMATCH %s: got %s want %s" % (" ".join(map(str, key)), got.get(key), want.get(key)))
            bad += 1
    return bad


def main():
    path, mode = sys.argv[1], sys.argv[2]
    samples, locinfo, mappings = parse_raw(path)
    if mode == "cubins":
        return check_cubins(samples, locinfo, mappings, sys.argv[3], sys.argv[4])
    if mode == "totals":
        if len(sys.argv) > 3:
            samples = [s for s in samples if s["labels"].get("pid") == sys.argv[3]]
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
    if mode == "pc-launcher":
        T, N = int(sys.argv[3]), int(sys.argv[4])
        for s in samples:
            s["locinfo"] = [locinfo.get(i, (0, 0)) for i in s["locs"]]
            s["map_start"] = [mappings.get(m, (0,))[0] for m, _ in s["locinfo"]]
        (got, misplaced), want = pc_totals(samples), expected_launcher_pc(T, N)
        bad = mismatches(got, want)
        if misplaced:
            print("MISPLACED: %d instructions not at their offset in their kernel's cubin mapping: %s" %
                  (len(misplaced), sorted(set(misplaced))[:5]))
            bad += 1
        if bad:
            return 1
        print("PC samples match launcher -t %d -n %d exactly: %d (site, instruction, stall) "
              "triples, each instruction in its kernel's cubin mapping" % (T, N, len(want)))
        return 0
    if mode == "launcher":
        T, N = int(sys.argv[3]), int(sys.argv[4])
        if len(sys.argv) > 5:
            samples = [s for s in samples if s["labels"].get("pid") == sys.argv[5]]
        got, want = totals(samples), expected_launcher(T, N)
        bad = mismatches(got, want)
        if bad:
            return 1
        print("profile matches launcher -t %d -n %d exactly: %d (site, activity) pairs, "
              "0 unattributed" % (T, N, len(want)))
        return 0
    print("unknown mode", mode, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
