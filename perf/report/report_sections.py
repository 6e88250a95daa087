# SPDX-License-Identifier: MIT
"""The sections of perf/report/report's page, one per kind of result, and the diff
of two runs. Each returns HTML text with inline SVG."""

import html
import math

import report_svg as svg

KIND_TITLES = {"uni": ("one-way bandwidth (row sends to column)", "GB/s", True), "bi": ("two-way bandwidth, each way", "GB/s", True),
               "lat": ("latency, one way", "us", False)}
TRANSPORT_COLORS = {"shm": "#1f77b4", "tcp": "#d62728", "verbs": "#2ca02c", "cuda_ipc": "#9467bd"}


def esc(x):
    return html.escape(str(x))


def matrix(tp, kind, n):
    vals = [[None] * n for _ in range(n)]
    cls = [[("X" if a == b else "-") for b in range(n)] for a in range(n)]
    for c in tp.get("matrices", {}).get(kind, {}).get("cells", []):
        a, b = c["a"], c["b"]
        vals[a][b] = c["median"]
        cls[a][b] = c["class"]
        if kind != "uni":  # measured once per pair
            vals[b][a], cls[b][a] = c["median"], c["class"]
    return vals, cls


def topology_of(run, tp):
    n = run.get("nranks", 0)
    uni, _ = matrix(tp, "uni", n)
    hosts = {}
    for r in run.get("ranks", []):
        hosts.setdefault(r.get("host_index", 0), (r.get("host", "host"), []))[1].append(str(r["rank"]))
    host_list = [hosts[k] for k in sorted(hosts)]
    edges = []
    color = TRANSPORT_COLORS.get(tp["name"], "#555")
    for a in range(n):
        for b in range(a + 1, n):
            ab, ba = uni[a][b], uni[b][a]
            if ab is not None or ba is not None:
                edges.append((str(a), str(b), ab, ba, color, "%d -> %d: %s GB/s, %d -> %d: %s GB/s over %s (one way)"
                              % (a, b, svg.fmt_num(ab), b, a, svg.fmt_num(ba), tp["name"])))
    return svg.topology("%s: ranks by host; on each edge, the number nearer a rank is the GB/s it sends one way"
                        % tp["name"], host_list, edges, ident="topology-%s" % tp["name"])


def sweep_plots(tp):
    bw = svg.Plot("%s: bandwidth against message size" % tp["name"], "message size (bytes)", "GB/s",
                  ident="sweep-bw-%s" % tp["name"])
    lat = svg.Plot("%s: latency against message size" % tp["name"], "message size (bytes)", "us",
                   ident="sweep-lat-%s" % tp["name"])
    for s in tp.get("sweeps", []):
        rows = s["rows"]
        xs = [r["bytes"] for r in rows]
        tag = "%d->%d %s" % (s["a"], s["b"], s["class"])
        bw.add("one way " + tag, xs, [r["bw_median"] for r in rows],
               band=([r["bw_p5"] for r in rows], [r["bw_p95"] for r in rows]))
        bw.add("two-way " + tag, xs, [r["bibw_median"] for r in rows], dashed=True)
        lat.add("median " + tag, xs, [r["lat_median"] for r in rows],
                band=([r["lat_p5"] for r in rows], [r["lat_p95"] for r in rows]))
        lat.add("p99 " + tag, xs, [r["lat_p99"] for r in rows], dashed=True)
    return bw.svg() + lat.svg()


VERDICT_STYLE = {"normal": "normal", "below the usual": "low", "low": "low"}


def verdicts(items):
    if not items:
        return ""
    rows = "".join(
        "<tr><td class=l>%d-&gt;%d %s</td><td>%s</td><td class=l>%s</td><td>%s</td><td>%s</td>"
        "<td class='l verdict-%s'>%s%s</td><td class=l>%s</td></tr>" % (
            v["a"], v["b"], esc(v["class"]), svg.fmt_num(v["measured_gbps"]), esc(v.get("figure", "")),
            svg.fmt_num(v.get("expected_gbps")), svg.fmt_num(v.get("fraction")),
            VERDICT_STYLE.get(v["verdict"], "none"), esc(v["verdict"]),
            (": " + esc(v["why"])) if v.get("why") else "", esc(v["basis"])) for v in items)
    return ("<table class=verdicts><tr><th class=l>link</th><th>measured GB/s</th><th class=l>figure</th>"
            "<th>baseline GB/s</th><th>fraction</th><th class=l>is this normal?</th><th class=l>baseline</th></tr>"
            "%s</table>" % rows)


def _class_latency(tp, cls):
    cells = [c["median"] for c in tp.get("matrices", {}).get("lat", {}).get("cells", []) if c["class"] == cls]
    if cells:
        return sorted(cells)[(len(cells) - 1) // 2]
    for s in tp.get("sweeps", []):
        if s["class"] == cls and s["rows"]:
            return s["rows"][0]["lat_median"]
    return None


def summary(runs):
    """One line first: every link class each tutti-bw run measured, its
    bandwidth and latency, and the verdict on it."""
    parts = []
    for i, run in enumerate(runs):
        if run.get("tool") != "tutti-bw":
            continue
        tag = chr(ord("A") + i)
        for tp in run.get("transports", []):
            if tp.get("status") != "measured":
                continue
            for v in tp.get("verdicts", []):
                lat = _class_latency(tp, v["class"])
                verdict = v["verdict"] if v["verdict"] not in ("withheld", "unknown") else \
                    "no verdict (%s)" % v.get("why", v["verdict"])
                parts.append("<span class='verdict-%s'>%s%s %s %s GB/s one way%s: %s</span>" % (
                    VERDICT_STYLE.get(v["verdict"], "none"), (tag + " ") if len(runs) > 1 else "", esc(tp["name"]),
                    esc(v["class"]), svg.fmt_num(v["measured_gbps"]),
                    (", %s us" % svg.fmt_num(lat)) if lat is not None else "", esc(verdict)))
    if not parts:
        return ""
    return "<p id=summary class=summary><b>Links at a glance:</b> %s</p>" % "; ".join(parts)


def fit_section(fit, tag):
    out = ["<h3>The fit (%s)</h3><p class=note>written to %s; reduction kernel %s GB/s; wake-up of a rank "
           "sharing a CPU %s us</p>" % (tag, esc(fit.get("file", "?")), svg.fmt_num(fit.get("reduce_kernel_gbps")),
                                        svg.fmt_num(fit.get("wake_us")))]
    if fit.get("explains_data") is False:
        out.append("<p class=warning id=fit-warning>This fit does not explain its data; tuning with it may do more "
                   "harm than good:<br>%s</p>" % "<br>".join(esc(l) for l in fit.get("warnings", "").splitlines()))
    links = svg.Plot("link fit: exchange time against size", "bytes each way", "us", ident="fit-links")
    rows = []
    for l in fit.get("links", []):
        pts = l["points"]
        links.add("%s measured" % l["class"], [p["bytes"] for p in pts], [p["exchange_us"] for p in pts], points=True)
        links.add("%s fitted" % l["class"], [p["bytes"] for p in pts], [p["fitted_us"] for p in pts], dashed=True)
        rows.append("<tr><td class=l>%s</td><td class=l>%s</td><td>%d-%d</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(l["class"]), esc(l["transport"]), l["a"], l["b"], svg.fmt_num(l["alpha_us"]), svg.fmt_num(l["gbps"]),
            svg.fmt_num(l["reduce_gbps"])))
    out.append("<table><tr><th class=l>class</th><th class=l>over</th><th>pair</th><th>alpha us</th><th>GB/s</th>"
               "<th>reduce GB/s</th></tr>%s</table>" % "".join(rows))
    out.append("<div class=figs>%s" % links.svg())
    erows = []
    for a in fit.get("algorithms", []):
        p = svg.Plot("%s: predicted against measured" % a["name"], "all-reduce bytes", "us", width=460, height=300,
                     ident="predict-%s" % a["name"])
        xs = [s["bytes"] for s in a["sizes"]]
        p.add("measured", xs, [s["measured_us"] for s in a["sizes"]], points=True)
        p.add("before", xs, [s["predicted_before_us"] for s in a["sizes"]], dashed=True)
        p.add("link fit", xs, [s["predicted_link_fit_us"] for s in a["sizes"]], dashed=True)
        p.add("after", xs, [s["predicted_after_us"] for s in a["sizes"]])
        out.append(p.svg())
        erows.append("<tr><td class=l>%s</td>%s</tr>" % (esc(a["name"]), "".join(
            "<td>%s</td><td>%.0f%%</td>" % (svg.fmt_num(a["median_ratio_" + m]), 100 * a["median_error_" + m])
            for m in ("before", "link_fit", "after"))))
    out.append("</div><table id=fit-errors><tr><th class=l>algorithm</th><th>before ratio</th><th>error</th>"
               "<th>link fit</th><th>error</th><th>after</th><th>error</th></tr>%s</table>" % "".join(erows))
    trows = []
    for t in fit.get("tuner", []):
        f = t["fastest_us"]
        r0, r1, rt = t["pick_before_us"] / f, t["pick_after_us"] / f, t["tuned_after_us"] / f
        trows.append("<tr><td>%s</td><td class=l>%s</td><td class=l>%s</td><td class='%s'>%.2f</td><td class=l>%s</td>"
                     "<td class='%s'>%.2f</td><td>%.2f</td></tr>" % (
                         svg.fmt_bytes(t["bytes"]), esc(t["fastest"]), esc(t["pick_before"]),
                         "worse" if r0 > 1.1 else "", r0, esc(t["pick_after"]), "worse" if r1 > 1.1 else "better",
                         r1, rt))
    out.append("<table id=fit-tuner><tr><th>bytes</th><th class=l>fastest</th><th class=l>tuner before</th>"
               "<th>its time / fastest</th><th class=l>tuner after</th><th>its time / fastest</th>"
               "<th>tuned comm / fastest</th></tr>%s</table>"
               "<p class=note>After the fit the tuner's pick is within 10%% of the fastest algorithm at %s of %s sizes "
               "(second pass).</p>" % ("".join(trows), fit.get("tuner_within_10pct", "?"), fit.get("tuner_sizes", "?")))
    return "".join(out)


def gpu_section(gpu):
    if not gpu:
        return ""
    if gpu.get("status") != "measured":
        return "<p class=note>GPU rows: %s.</p>" % esc(gpu.get("why", "not measured"))
    out = []
    for d in gpu.get("devices", []):
        rows = "".join("<tr><td class=l>%s</td><td>%s</td><td>%.1f%%</td></tr>" % (
            esc(r["what"]), svg.fmt_num(r["median"]), 100 * r["cv"]) for r in d["rows"])
        out.append("<h3>GPU %d: %s (%s)</h3><table><tr><th class=l>copy</th><th>GB/s</th><th>cv</th></tr>%s</table>" % (
            d["index"], esc(d["name"]), esc(d["busid"]), rows))
    peer = gpu.get("peer")
    if peer:
        n = 1 + max([c["a"] for c in peer["uni"]] + [c["b"] for c in peer["uni"]] + [0])
        for kind in ("uni", "bi", "lat"):
            vals = [[None] * n for _ in range(n)]
            cls = [[("X" if a == b else "-") for b in range(n)] for a in range(n)]
            for c in peer[kind]:
                vals[c["a"]][c["b"]], cls[c["a"]][c["b"]] = c["median"], c["class"]
            title, unit, hb = KIND_TITLES[kind]
            out.append(svg.heatmap("GPU peer copies: " + title, vals, ["GPU%d" % i for i in range(n)], unit, hb, cls,
                                   ident="gpu-%s" % kind))
    return "".join(out)


def bw_run(run, tag):
    m = run.get("machine", {})
    state = ("; %s ranks on %s CPUs of rank 0's host, load average %s" % (
        m.get("ranks_here"), m.get("cpus"), svg.fmt_num(m.get("load1")))) if m else ""
    out = ["<h2>%s: tutti-bw, %s ranks on %s host(s) (%s)</h2><p class=note>memcpy %s GB/s on one CPU%s; "
           "cells are medians of repeats, repeated until the median's 95%% interval was within %s%% or the "
           "budget ran out; a heat map colours each cell by the share of the best cell it reaches, on a scale "
           "from 0, so that noise looks like noise.</p>" % (
               tag, run.get("nranks"), run.get("nhosts"), esc(run["_file"]), svg.fmt_num(run.get("memcpy_gbps")),
               esc(state), svg.fmt_num(100 * run.get("options", {}).get("tolerance", 0)))]
    n = run.get("nranks", 0)
    for tp in run.get("transports", []):
        if tp.get("status") != "measured":
            out.append("<p class=note>%s: %s; skipped.</p>" % (esc(tp["name"]), esc(tp.get("why", ""))))
            continue
        out.append("<h3>%s</h3><div class=figs>" % esc(tp["name"]))
        for kind in ("uni", "bi", "lat"):
            if kind in tp.get("matrices", {}):
                vals, cls = matrix(tp, kind, n)
                title, unit, hb = KIND_TITLES[kind]
                size = tp["matrices"][kind]["bytes"]
                out.append(svg.heatmap("%s %s, %s messages" % (tp["name"], title, svg.fmt_bytes(size)), vals,
                                       [str(i) for i in range(n)], unit, hb, cls,
                                       ident="heatmap-%s-%s" % (tp["name"], kind)))
                strag = tp["matrices"][kind].get("stragglers", [])
                for s in strag:
                    out.append("<p class=note>straggler: rank %d's %s links at %.2f of their class's median</p>" %
                               (s["rank"], kind, s["ratio"]))
        if "matrices" in tp:
            out.append(topology_of(run, tp))
        out.append(sweep_plots(tp) if tp.get("sweeps") else "")
        out.append("</div>")
        if tp.get("others_cpus") is not None:
            out.append("<p class=note>While %s was measured, other processes kept %s CPUs busy.</p>" % (
                esc(tp["name"]), svg.fmt_num(tp["others_cpus"])))
        out.append(verdicts(tp.get("verdicts")))
    out.append(gpu_section(run.get("gpu")))
    if run.get("fit"):
        out.append(fit_section(run["fit"], tag))
    return "".join(out)


def perf_rows(run):
    rows = run.get("results", [])
    by = {}
    for r in rows:
        by.setdefault(r["collective"], []).append(r)
    return by


def perf_run(run, tag):
    out = ["<h2>%s: tutti-perf, %s ranks (%s)</h2><div class=figs>" % (tag, run.get("nranks", "?"), esc(run["_file"]))]
    by = perf_rows(run)
    bus = svg.Plot("bus bandwidth against size (out of place)", "bytes", "busbw GB/s", ident="perf-busbw")
    tim = svg.Plot("time against size (out of place)", "bytes", "us", ident="perf-time")
    for coll, rows in sorted(by.items()):
        xs = [r["size"] for r in rows]
        oop = [r.get("out_of_place") or {} for r in rows]
        bus.add(coll, xs, [o.get("busbw") for o in oop])
        pi = [o.get("per_iter") or {} for o in oop]
        band = ([p.get("min_us") for p in pi], [p.get("p95_us") for p in pi]) if any(pi) else None
        tim.add(coll, xs, [o.get("time_us") for o in oop], band=band)
    out.append(bus.svg() + tim.svg())
    for coll, rows in sorted(by.items()):
        if not any(r.get("predicted_us") for r in rows):
            continue
        p = svg.Plot("%s: predicted and measured" % coll, "bytes", "us", width=480,
                     height=300, ident="perf-predict-%s" % coll)
        xs = [r["size"] for r in rows]
        p.add("measured", xs, [(r.get("out_of_place") or {}).get("time_us") for r in rows], points=True)
        p.add("predicted", xs, [r.get("predicted_us") for r in rows], dashed=True)
        out.append(p.svg())
    out.append("</div>")
    for coll, rows in sorted(by.items()):
        trs = "".join("<tr><td>%s</td><td class=l>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            svg.fmt_bytes(r["size"]), esc(r.get("algorithm", "-")), svg.fmt_num((r.get("out_of_place") or {}).get("time_us")),
            svg.fmt_num(r.get("predicted_us")), svg.fmt_num((r.get("out_of_place") or {}).get("busbw"))) for r in rows)
        out.append("<h3>%s</h3><table><tr><th>size</th><th class=l>algorithm</th><th>time us</th><th>predicted us</th>"
                   "<th>busbw GB/s</th></tr>%s</table>" % (esc(coll), trs))
    return "".join(out)


def explain_run(run, tag):
    if "sweep" in run:  # tutti-explain --measure -b -e --json
        pts = run["sweep"]
        p = svg.Plot("%s: predicted and measured" % run.get("title", ""), "bytes", "us", ident="explain-sweep-%s" % tag)
        xs = [s["bytes"] for s in pts]
        p.add("measured", xs, [s["measured_us"] for s in pts], points=True)
        p.add("predicted", xs, [s["predicted_us"] for s in pts], dashed=True)
        ratio = svg.Plot("measured / predicted", "bytes", "ratio", logy=False, width=460, height=300,
                         ident="explain-ratio-%s" % tag)
        ratio.add("measured / predicted", xs, [s["measured_us"] / s["predicted_us"] if s["predicted_us"] > 0 else None
                                               for s in pts])
        return "<h2>%s: %s</h2><div class=figs>%s%s</div>" % (tag, esc(run.get("title", "")), p.svg(), ratio.svg())
    import report_anim
    return "<h2>%s: %s</h2>%s" % (tag, esc(run.get("title", "a schedule")), report_anim.animation(run, tag))


def keyed(run):
    """Every comparable figure of a run: key -> (value, higher_is_better, size or None)."""
    out = {}
    if run.get("tool") == "tutti-bw":
        for tp in run.get("transports", []):
            for kind, m in tp.get("matrices", {}).items():
                for c in m.get("cells", []):
                    out[("%s %s %d->%d" % (tp["name"], kind, c["a"], c["b"]))] = (c["median"], kind != "lat", None)
            for s in tp.get("sweeps", []):
                for r in s["rows"]:
                    base = "%s %s sweep" % (tp["name"], s["class"])
                    out[(base + " bw", r["bytes"])] = (r["bw_median"], True, r["bytes"])
                    out[(base + " lat", r["bytes"])] = (r["lat_median"], False, r["bytes"])
    if run.get("tool") == "tutti-perf":
        for r in run.get("results", []):
            o = r.get("out_of_place") or {}
            out[(r["collective"] + " time", r["size"])] = (o.get("time_us"), False, r["size"])
    return out


def diffs(runs):
    out = []
    for tool in ("tutti-bw", "tutti-perf"):
        same = [(i, r) for i, r in enumerate(runs) if r.get("tool") == tool]
        if len(same) < 2:
            continue
        (ia, a), (ib, b) = same[0], same[1]
        ka, kb = keyed(a), keyed(b)
        common = [k for k in ka if k in kb and ka[k][0] and kb[k][0]]
        ta, tb = chr(ord("A") + ia), chr(ord("A") + ib)
        out.append("<h2 id=diff>%s against %s (%s)</h2><p class=note>ratio = %s / %s; green: %s is better by more "
                   "than 5%%, red: worse.</p>" % (tb, ta, tool, tb, ta, tb))
        plot = svg.Plot("%s / %s against size" % (tb, ta), "bytes", "ratio", logy=False, ident="diff-plot-%s" % tool)
        series = {}
        rows = []
        for k in common:
            va, hb, size = ka[k]
            vb = kb[k][0]
            ratio = vb / va
            good = ratio > 1.05 if hb else ratio < 1 / 1.05
            bad = ratio < 1 / 1.05 if hb else ratio > 1.05
            name = k[0] if isinstance(k, tuple) else k
            rows.append("<tr><td class=l>%s%s</td><td>%s</td><td>%s</td><td class='%s'>%.2f</td></tr>" % (
                esc(name), (" " + svg.fmt_bytes(size)) if size else "", svg.fmt_num(va), svg.fmt_num(vb),
                "better" if good else "worse" if bad else "", ratio))
            if size:
                series.setdefault(name, []).append((size, ratio))
        for name, pts in sorted(series.items()):
            pts.sort()
            plot.add(name, [p[0] for p in pts], [p[1] for p in pts])
        out.append("<div class=figs>%s</div><table id=diff-table><tr><th class=l>what</th><th>%s</th><th>%s</th>"
                   "<th>%s/%s</th></tr>%s</table>" % (plot.svg() if series else "", ta, tb, tb, ta, "".join(rows)))
    return "".join(out)
