# SPDX-License-Identifier: MIT
"""perf/report/report's animation of a schedule (tutti-explain --json): the
step-by-step picture of explain_view.js, the script tutti-explain --html
draws with (the algorithm in its own shape, each arrow labelled with the
chunk and partial sum it carries; back, forward, play), inline in the page,
and every step as a table for a reader without scripts."""

import html
import json
import os

import report_svg as svg

VIEW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "explain_view.js")
_view_sent = []  # the script goes into a page once, before its first animation


def esc(x):
    return html.escape(str(x), quote=True)


def _script():
    if _view_sent:
        return ""
    _view_sent.append(True)
    with open(VIEW) as f:
        return "<script>%s</script>" % f.read()


def animation(doc, tag):
    steps = doc.get("steps", [])
    if not steps:
        return "<p class=note>no steps</p>"
    if "shape" not in doc:
        return ("<p class=note>%s comes from an older tutti-explain (schema %s), which did not say how to draw "
                "it: run tutti-explain --json again.</p>" % (esc(doc.get("_file", "this schedule")), esc(doc.get("schema"))))
    base = "anim-%s" % tag
    data = json.dumps({"docs": [doc]}).replace("<", "\\u003c")
    out = ["<div id=%s class=animation></div>" % base, _script(),
           "<script type=application/json id=%s-data>%s</script>" % (base, data),
           "<script>tuttiExplain(document.getElementById('%s'), JSON.parse(document.getElementById('%s-data')"
           ".textContent));</script>" % (base, base)]
    rows = []
    for k, st in enumerate(steps):
        for r in st["ranks"]:
            rows.append("<tr><td>%d</td><td>%s</td><td>%d (round %d)</td><td class=l>%s</td><td>%s</td></tr>" % (
                k + 1, svg.fmt_num(st["t_us"]), r["rank"], r["round"], "<br>".join(esc(l) for l in r["labels"]),
                svg.fmt_num(r["done_us"])))
    out.append("<details><summary>every step as a table</summary><table><tr><th>step</th><th>at us</th>"
               "<th>rank</th><th class=l>does</th><th>done at us</th></tr>%s</table></details>" % "".join(rows))
    return "".join(out)
