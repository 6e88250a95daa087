# SPDX-License-Identifier: MIT
"""The report's browser test's two halves around Chromium:

    python3 tests/perf/report_layout.py inject report.html tests/perf/report_layout.js out.html
        copies the page with the layout check as its last script;
    python3 tests/perf/report_layout.py judge dom.html [--partial-edges]
        reads what the check wrote into the rendered DOM, prints it in one
        line and exits 1 when the picture is wrong: overlapping or clipped
        text, overlapping figures, a heat-map cell without its number or
        coloured to make noise look like structure, a graph edge without the
        numbers of both its directions (with --partial-edges: beyond those
        the figure says it left off for room)."""
import html
import json
import re
import sys


def inject(page, script, out):
    text = open(page).read()
    js = open(script).read()
    if "</body>" not in text:
        raise SystemExit("report_layout.py: %s has no </body>" % page)
    open(out, "w").write(text.replace("</body>", "<script>%s</script></body>" % js, 1))


def judge(dom, partial_edges):
    found = re.findall(r'<pre id="layout-check">(.*?)</pre>', open(dom).read(), re.S)
    if not found:
        print("FAIL: the layout check did not run in the page")
        return 1
    r = json.loads(html.unescape(found[-1]))
    print("%d figures, %d texts, %d heat-map cells, %d edges with %d direction numbers (%d left off)" % (
        r["figures"], r["texts"], r["cells"], r["edges"], r["edge_numbers"], r["left_off"]))
    bad = 0
    for key, what in (("overlaps", "overlapping text"), ("clipped", "text outside its figure"),
                      ("figure_overlaps", "overlapping figures"), ("unlabelled", "cells without their number"),
                      ("noisy", "colours that magnify noise")):
        if r[key]:
            print("FAIL: %d %s, e.g. %s" % (len(r[key]), what, "; ".join(r[key][:4])))
            bad = 1
    missing = r["missing_directions"] - (r["left_off"] if partial_edges else 0)
    if missing > 0:
        print("FAIL: %d directions of graph edges without their number" % missing)
        bad = 1
    for key, what in (("texts", "text"), ("cells", "heat-map cells"), ("edges", "graph edges")):
        if r[key] == 0:
            print("FAIL: no %s found in the rendered page" % what)
            bad = 1
    return bad


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "inject":
        inject(*sys.argv[2:])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "judge":
        sys.exit(judge(sys.argv[2], "--partial-edges" in sys.argv[3:]))
    else:
        raise SystemExit(__doc__)
