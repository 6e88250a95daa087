# SPDX-License-Identifier: MIT
"""The model of perf/scale/scale-bench's figures: each figure y of each
system and layout, as a function of the ranks N, fitted as y = a + b N^k
(a, b >= 0, k from 0 to 3 in steps of 0.02, least squares on the relative
error, so small and large N weigh alike). a is what one rank costs
whatever N, k says how the rest grows (1: linearly, 2: with N^2). The fit
is checked first: made without the largest measured N, it predicts that
point, and the report gives the prediction and the error. Then, fitted on
every point, it gives the figure at 10k and 100k ranks. Stdlib only.

    scale_model.py scale.csv [more.csv ...]   (runs of one build at other
                                               rank counts, taken together)"""
import csv
import sys

FIGURES = [("create_s", "creation s"), ("rss_mb_max", "RSS MiB (max)"), ("fds_max", "descriptors (max)"),
           ("shm_mb_host", "shm MiB per host"), ("setup_kb_max", "set-up KiB (max rank)")]
TARGETS = (10_000, 100_000)


def fit(points):
    """(a, b, k, rms relative error) of y = a + b N^k over points [(N, y)], or None."""
    best = None
    for step in range(151):
        k = step * 0.02
        rows = [(1 / y, n ** k / y) for n, y in points]
        saa = sum(u * u for u, _ in rows)
        sab = sum(u * v for u, v in rows)
        sbb = sum(v * v for _, v in rows)
        sa, sb = sum(u for u, _ in rows), sum(v for _, v in rows)
        det = saa * sbb - sab * sab
        a, b = ((sa * sbb - sb * sab) / det, (sb * saa - sa * sab) / det) if abs(det) > 1e-300 else (-1, -1)
        if a < 0 or b < 0:  # the best with a or b at zero
            a, b = (0.0, sb / sbb) if sa / saa * sa < sb / sbb * sb else (sa / saa, 0.0)
        err = (sum(((a + b * n ** k) / y - 1) ** 2 for n, y in points) / len(points)) ** 0.5
        if best is None or err < best[3] - 1e-12:
            best = (a, b, k, err)
    return best


def predict(m, n):
    return m[0] + m[1] * n ** m[2]


def points(rows, system, layout, key):
    out = []
    for r in rows:
        v = r.get(key, "")
        if r["system"] == system and r["layout"] == layout and r["status"] == "ok" and v not in ("", None):
            if float(v) > 0:
                out.append((int(r["ranks"]), float(v)))
    return sorted(out)


def groups(rows):
    seen = []
    for r in rows:
        if (r["system"], r["layout"]) not in seen:
            seen.append((r["system"], r["layout"]))
    return seen


def fmt(v):
    return f"{v:.3g}" if v < 1e5 else f"{v:.2e}"


def report(rows):
    """A Markdown table: every figure's model, its check and its value at 10k and 100k ranks."""
    lines = ["| system | layout | figure | model | check: without the largest N | 10k ranks | 100k ranks |",
             "|---|---|---|---|---|---:|---:|"]
    for system, layout in groups(rows):
        for key, name in FIGURES:
            pts = points(rows, system, layout, key)
            if len(pts) < 3:
                continue
            m = fit(pts)
            check = "too few points"
            if len(pts) >= 4:
                held = fit(pts[:-1])
                n, y = pts[-1]
                guess = predict(held, n)
                check = f"{fmt(guess)} predicted at {n}, {fmt(y)} measured ({(guess / y - 1) * 100:+.0f}%)"
            lines.append(f"| {system} | {layout} | {name} | {fmt(m[0])} + {m[1]:.3g} N^{m[2]:.2f} "
                         f"(fit within {m[3] * 100:.0f}%) | {check} | {fmt(predict(m, TARGETS[0]))} | "
                         f"{fmt(predict(m, TARGETS[1]))} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    every = []
    for path in sys.argv[1:]:
        with open(path) as f:
            every += list(csv.DictReader(f))
    for label in sorted({r["label"] for r in every}):
        print(f"{label}:\n\n{report([r for r in every if r['label'] == label])}")
