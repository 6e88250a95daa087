#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The plot of perf/scale/scale-bench: one panel per figure against the
ranks (log-log), a line per system and layout (solid: one host, dashed:
simulated hosts), and the model of each (dotted) out to 100k ranks.

    scale_plot.py scale.csv scale.png [scale2.csv ...]   (needs matplotlib)
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_model as model  # noqa: E402

COLORS = {"tutti": "tab:blue", "mpi": "tab:orange", "gloo": "tab:green"}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = []
    for path in [sys.argv[1]] + sys.argv[3:]:
        with open(path) as f:
            rows += list(csv.DictReader(f))
    labels = sorted({r["label"] for r in rows})
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (key, name) in zip(axes.flat, model.FIGURES):
        for label in labels:
            mine = [r for r in rows if r["label"] == label]
            for system, layout in model.groups(mine):
                pts = model.points(mine, system, layout, key)
                if not pts:
                    continue
                style = "-" if layout == "one host" else "--"
                tag = f"{system}, {layout}" + (f" ({label})" if len(labels) > 1 else "")
                ax.plot([n for n, _ in pts], [y for _, y in pts], style, marker="o", ms=3,
                        color=COLORS.get(system, "black"), label=tag, alpha=1 if label == labels[-1] else 0.5)
                if len(pts) >= 3:
                    m = model.fit(pts)
                    xs = [pts[-1][0] * 1.5 ** i for i in range(40) if pts[-1][0] * 1.5 ** i <= 1.2e5]
                    ax.plot(xs, [model.predict(m, x) for x in xs], ":", color=COLORS.get(system, "black"),
                            alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("ranks")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    failed = [f"{r['system']} {r['layout']} {r['ranks']}: {r['status']}" for r in rows
              if r["status"] in ("failed", "timeout")]
    axes.flat[5].axis("off")
    axes.flat[5].text(0, 1, "dotted: the model (a + b N^k), out to 100k ranks\n\nnot created:\n" +
                      ("\n".join(failed[:12]) or "none"), va="top", fontsize=8, family="monospace")
    fig.suptitle("communicator creation at scale: " + ", ".join(labels))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)
    print(f"plot: {sys.argv[2]}")


if __name__ == "__main__":
    main()
