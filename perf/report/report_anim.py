# SPDX-License-Identifier: MIT
"""perf/report/report's animation of a schedule (tutti-explain --json): one SVG
panel per global step, with the messages of the step as arrows between the
ranks' rows and every rank's chunks coloured by how many ranks' terms they
hold. The panels play in turn by CSS animation (no script), a row of radio
buttons steps through them by hand, and all of them are listed below."""

import html

import report_svg as svg

STEP_SECONDS = 1.6


def esc(x):
    return html.escape(str(x), quote=True)


def _fill(cell, p):
    if cell == "S":
        return svg._ramp(1.0), "#000"
    if cell in (".", ""):
        return "#f0f0f0", "#999"
    f = len(cell) / float(p)
    return svg._ramp(0.15 + 0.7 * f), "#fff" if f < 0.5 else "#000"


def panel(doc, k, ident):
    step = doc["steps"][k]
    p, grid = doc["nranks"], step.get("grid", [])
    nchunks = max([len(row) for row in grid] + [0])
    rowh, left, wire, cellw = 26, 70, 170, 44 if p <= 8 else 34
    width = left + wire + 20 + cellw * nchunks + 20
    height = 46 + rowh * p + 16
    active = {r["rank"] for r in step["ranks"]}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="step" width="%d" height="%d" id="%s">' %
           (width, height, esc(ident))]
    out.append('<defs><marker id="%s-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>' % esc(ident))
    out.append('<text x="4" y="16" class="title">step %d of %d, at %s us on the model\'s clock</text>' %
               (k + 1, len(doc["steps"]), svg.fmt_num(step["t_us"])))
    out.append('<text x="%d" y="34" class="tick">messages</text><text x="%d" y="34" class="tick">'
               "output by chunk (S: all terms)</text>" % (left + 10, left + wire + 20))
    top = 46

    def row_y(r):
        return top + rowh * r + rowh / 2

    for r in range(p):
        y = row_y(r)
        weight = "bold" if r in active else "normal"
        color = "#000" if r in active else "#999"
        out.append('<text x="6" y="%.1f" class="ranklabel" font-weight="%s" fill="%s">rank %d</text>' %
                   (y + 4, weight, color, r))
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, left + wire, y, y))
        for c, cell in enumerate(grid[r] if r < len(grid) else []):
            fill, ink = _fill(cell, p)
            x = left + wire + 20 + cellw * c
            out.append('<rect x="%d" y="%.1f" width="%d" height="%d" fill="%s" stroke="#fff"/>' %
                       (x, top + rowh * r + 2, cellw - 2, rowh - 4, fill))
            out.append('<text x="%.1f" y="%.1f" class="cell" text-anchor="middle" fill="%s">%s</text>' %
                       (x + (cellw - 2) / 2, y + 4, ink, esc(cell)))
    msgs = step.get("messages", [])
    for i, m in enumerate(msgs):
        x = left + 14 + (wire - 28) * (i + 0.5) / max(1, len(msgs))
        y1, y2 = row_y(m["from"]), row_y(m["to"])
        out.append('<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#c0392b" '
                   'stroke-width="1.6" marker-end="url(#%s-arrow)"><title>%s</title></path>' %
                   (x - 10, y1, x + 18, y1, x + 18, y2, x - 10, y2, esc(ident), esc("rank %d %s" % (m["from"], m["label"]))))
    out.append("</svg>")
    return "".join(out)


def animation(doc, tag):
    steps = doc.get("steps", [])
    n = len(steps)
    if n == 0:
        return "<p class=note>no steps</p>"
    base = "anim-%s" % tag
    total = STEP_SECONDS * n
    css = ["#%s .stack { position: relative; }" % base,
           "#%s .stack > svg { position: absolute; left: 0; top: 0; opacity: 0; background: #fff;"
           " animation: %s-cycle %.1fs infinite; }" % (base, base, total),
           "@keyframes %s-cycle { 0%% { opacity: 1; } %.3f%% { opacity: 1; } %.3f%% { opacity: 0; } 100%% { opacity: 0; } }" %
           (base, 100.0 / n - 0.01, 100.0 / n),
           "#%s .manual > svg { display: none; }" % base]
    for k in range(n):
        css.append("#%s .stack > svg:nth-child(%d) { animation-delay: %.2fs; }" % (base, k + 1, STEP_SECONDS * k - total))
        css.append("#%s-r%d:checked ~ .manual > svg:nth-of-type(%d) { display: block; }" % (base, k, k + 1))
    first = panel(doc, 0, "%s-size" % base)
    width = first.split('width="')[1].split('"')[0]
    height = first.split('height="')[1].split('"')[0]
    out = ["<div id=%s class=animation><style>%s</style>" % (base, "\n".join(css))]
    out.append("<p class=note>%s predicted by the model: %s us; textbook: %s = %s us.</p>" % (
        esc(doc.get("title", "")), svg.fmt_num(doc.get("predicted_us")), esc(doc.get("textbook", "")),
        svg.fmt_num(doc.get("textbook_us"))))
    if doc.get("fold"):
        out.append("<p class=note>%s</p>" % esc(doc["fold"]).replace("\n", " "))
    out.append("<h3>playing (%.1f s a step)</h3><div class=stack style='width:%spx;height:%spx'>%s</div>" % (
        STEP_SECONDS, width, height, "".join(panel(doc, k, "%s-play%d" % (base, k)) for k in range(n))))
    radios = "".join("<input type=radio name=%s id=%s-r%d%s><label for=%s-r%d>%d</label> " % (
        base, base, k, " checked" if k == 0 else "", base, k, k + 1) for k in range(n))
    out.append("<h3>step by step</h3>%s<div class=manual>%s</div>" % (
        radios, "".join(panel(doc, k, "%s-step%d" % (base, k)) for k in range(n))))
    rows = []
    for k, st in enumerate(steps):
        for r in st["ranks"]:
            rows.append("<tr><td>%d</td><td>%s</td><td>%d (round %d)</td><td class=l>%s</td><td>%s</td></tr>" % (
                k + 1, svg.fmt_num(st["t_us"]), r["rank"], r["round"], "<br>".join(esc(l) for l in r["labels"]),
                svg.fmt_num(r["done_us"])))
    out.append("<details><summary>every step as a table</summary><table><tr><th>step</th><th>at us</th>"
               "<th>rank</th><th class=l>does</th><th>done at us</th></tr>%s</table></details></div>" % "".join(rows))
    return "".join(out)
