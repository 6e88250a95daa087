#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots perf/ddp/ddp-train.py's JSON: loss curves and communication time per step.

    python3 perf/ddp/ddp-plot.py perf/out/ddp-2.json perf/out/ddp-4.json -o perf/plots/ddp

writes ddp-loss.png and ddp-comm.png (one panel per JSON file). Needs
matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("-o", "--out", default="ddp", help="prefix of the PNG files")
    args = ap.parse_args()
    jobs = [json.load(open(p)) for p in args.json]
    for what, ylabel, fn in (("loss", "training loss (mean over ranks)", lambda r: r["mean_loss"]),
                             ("comm", "all-reduce time per step (ms)", lambda r: [1e3 * x for x in r["comm_s"]])):
        fig, axes = plt.subplots(1, len(jobs), figsize=(6 * len(jobs), 4), squeeze=False)
        for ax, job in zip(axes[0], jobs):
            for run in job["runs"]:
                style = "--" if run["name"] == "gloo" else "-"
                ax.plot(fn(run), style, label=run["name"], linewidth=1)
            ax.set_title(f"{job['ranks']} ranks, {job['runs'][0]['params'] / 1e6:.1f}M parameters")
            ax.set_xlabel("step")
            ax.set_ylabel(ylabel)
            if what == "comm":
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(f"{args.out}-{what}.png", dpi=110)
        print(f"wrote {args.out}-{what}.png")


if __name__ == "__main__":
    main()
