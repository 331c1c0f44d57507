"""Draws docs/h200x2-primitives.png from the bench proxy logs in this folder: each primitive's
jmscclpp figure (both runs of bench-proxy-183f8bd.log), the old proxy path's (the 'old' runs of the
A/B logs; PortChannel rows only) and MSCCL++ C++ 0.10's (the constant the bench prints beside it).
python3 plot_primitives.py (matplotlib)."""
import re
import sys
import textwrap
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).parent
ROW = re.compile(r"^\| (.+?)\s+\|\s+([0-9.]+) \|\s+([0-9.]+) \|")


def runs(path, label=None):
    """Rows of each run of a log: [{measure: (jmscclpp, mscclpp)}], only runs whose '==' line holds label."""
    out, cur, keep = [], None, label is None
    for line in path.read_text().splitlines():
        if line.startswith("== ") and not line.startswith("== exit"):
            keep = label is None or label in line
            cur = {}
            if keep:
                out.append(cur)
        m = ROW.match(line)
        if m and keep and cur is not None:
            cur[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)))
    return out


final = runs(HERE / "bench-proxy-183f8bd.log")
old = runs(HERE / "bench-proxy-ab-1-183f8bd-pre.log", "== old") + runs(HERE / "bench-proxy-ab-2-183f8bd-pre.log", "== old")
measures = list(final[0].keys())
times = [m for m in measures if m.endswith("µs")]
bws = [m for m in measures if m.endswith("GB/s")]

fig, axes = plt.subplots(1, 2, figsize=(16, 6), gridspec_kw={"width_ratios": [len(times), len(bws) + 1]})
for ax, group, unit in ((axes[0], times, "µs (lower is better)"), (axes[1], bws, "GB/s (higher is better)")):
    x = range(len(group))
    w = 0.27
    mine = [sum(r[m][0] for r in final) / len(final) for m in group]
    theirs = [final[0][m][1] for m in group]
    before = [sum(r[m][0] for r in old) / len(old) if all(m in r for r in old) else 0 for m in group]
    ax.bar([i - w for i in x], before, w, label="jmscclpp before (subscribed flush, fixed spin)", color="#bbbbbb")
    ax.bar(list(x), mine, w, label="jmscclpp 183f8bd", color="#3366cc")
    ax.bar([i + w for i in x], theirs, w, label="MSCCL++ C++ 0.10", color="#dd8833")
    ax.set_xticks(list(x))
    ax.set_xticklabels([textwrap.fill(re.sub(r",? (µs|GB/s)$", "", m).replace(" poller", ""), 20) for m in group],
                       fontsize=7)
    ax.set_ylabel(unit)
    ax.legend(fontsize=8, loc="upper right" if unit.startswith("µs") else "lower right")
fig.suptitle("Primitives on 2 x H200 (bench proxy --backend cuda; NCCL has no such primitives)")
fig.tight_layout()
out = HERE.parent.parent / "h200x2-primitives.png"
fig.savefig(out, dpi=110)
print("wrote", out, file=sys.stderr)
