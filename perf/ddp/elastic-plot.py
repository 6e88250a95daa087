#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots perf/ddp/elastic-ddp.py's JSON: the loss across the failure, against time and step.

    python3 perf/ddp/elastic-plot.py perf/plots/elastic.json -o perf/plots/elastic-loss.png

Left: the global loss of each completed step against seconds since the run
began, the kill marked, for both runs (the restart run's replayed steps
show as its curve going back). Right: the same against the step, the
tutti run's world size shaded. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("-o", "--out", default="elastic-loss.png")
    args = ap.parse_args()
    job = json.load(open(args.json))
    fig, (by_time, by_step) = plt.subplots(1, 2, figsize=(12, 4))
    colors = {"tutti": "tab:blue", "restart": "tab:orange"}
    for run in job["runs"]:
        c = run["curve"]
        if not c:
            continue
        t0 = min(e["t"] for e in run["events"])
        label = {"tutti": "tutti: shrink, then grow", "restart": "torchrun --max_restarts 1"}[run["name"]]
        by_time.plot([p["t"] - t0 for p in c], [p["loss"] for p in c], ".-", ms=3, lw=1, color=colors[run["name"]],
                     label=label)
        if run.get("kill_t"):
            by_time.axvline(run["kill_t"] - t0, color=colors[run["name"]], ls=":", lw=1)
        by_step.plot([p["step"] for p in c], [p["loss"] for p in c], ".", ms=3, color=colors[run["name"]],
                     label=label)
        if run["name"] == "tutti":
            small = [p["step"] for p in c if p["world"] < job["args"]["ranks"]]
            if small:
                by_step.axvspan(min(small) - 0.5, max(small) + 0.5, color="tab:blue", alpha=0.1,
                                label=f"tutti on {job['args']['ranks'] - 1} ranks")
    by_time.set_xlabel("seconds since the start (dotted: kill -9)")
    by_step.set_xlabel("step")
    for ax in (by_time, by_step):
        ax.set_ylabel("training loss (mean over the ranks)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
