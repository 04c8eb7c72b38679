"""The loader's `loader:` line (printed at its end), as the GPU scripts read it.

parse(line) gives {field: float} for every NAME=NUMBER on the line, the
`stage_ms` block's entries as stage_NAME, and share_with_helper_pct: the
loader's CPU over its wall time with its CRC helper's CPU added, as the
bench counts it. last(path) parses the last such line of a log (None when
the log has none or cannot be read).
"""
import re

_STAGES = re.compile(r"stage_ms (.*?) copy_kib_mean=")


def parse(line):
    if not line.startswith("loader: "):
        return None
    got = {}
    st = _STAGES.search(line)
    if st:
        for k, v in re.findall(r"(\w+)=([\d.]+)", st.group(1)):
            got["stage_" + k] = float(v)
        line = line[:st.start()] + line[st.end() - len("copy_kib_mean="):]
    for k, v in re.findall(r"(\w+)=([\d.]+)", line):
        got[k] = float(v)
    if got.get("wall_s") and "cpu_s" in got:
        got["share_with_helper_pct"] = 100 * (got["cpu_s"] + got.get("helper_cpu_s", 0)) / got["wall_s"]
    return got


def last(path):
    try:
        lines = [l for l in open(path) if l.startswith("loader: ")]
    except OSError:
        return None
    return parse(lines[-1]) if lines else None
