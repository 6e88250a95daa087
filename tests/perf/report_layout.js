// SPDX-License-Identifier: MIT
// Runs inside the rendered report (tests/perf/report_layout.py puts it there) and
// writes what it finds about the picture as JSON into a pre element at the
// end of the page, id layout-check: text that overlaps other text or sticks out of its figure, figures
// that overlap, heat-map cells without their number or whose colours make
// noise look like structure, and graph edges missing a direction's number.
(function () {
  "use strict";
  function shown(el) {
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
      var cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden" || parseFloat(cs.opacity) < 0.05) return false;
    }
    var r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0; // a level line has no height

  }
  function cross(a, b, slack) {
    var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > slack && h > slack;
  }
  function inside(a, b, slack) {
    return a.left >= b.left - slack && a.right <= b.right + slack && a.top >= b.top - slack &&
      a.bottom <= b.bottom + slack;
  }
  function value(cell) { // data-v, or the number after the tooltip's colon
    var v = parseFloat(cell.getAttribute("data-v"));
    return isNaN(v) ? parseFloat(cell.querySelector("title").textContent.split(": ")[1]) : v;
  }
  function name(svg) { return svg.id || svg.getAttribute("class") || "svg"; }
  function rgb(fill) {
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(fill || "");
    return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : null;
  }
  var out = { texts: 0, figures: 0, overlaps: [], clipped: [], figure_overlaps: [], cells: 0, unlabelled: [],
              noisy: [], edges: 0, edge_numbers: 0, missing_directions: 0, left_off: 0 };
  var svgs = Array.prototype.filter.call(document.querySelectorAll("svg"), shown);
  out.figures = svgs.length;
  svgs.forEach(function (svg, i) {
    var box = svg.getBoundingClientRect();
    svgs.slice(i + 1).forEach(function (other) {
      if (cross(box, other.getBoundingClientRect(), 2))
        out.figure_overlaps.push(name(svg) + " / " + name(other));
    });
    var texts = Array.prototype.filter.call(svg.querySelectorAll("text"), shown);
    var rects = texts.map(function (t) { return t.getBoundingClientRect(); });
    out.texts += texts.length;
    texts.forEach(function (t, j) {
      if (!inside(rects[j], box, 1)) out.clipped.push(name(svg) + ": '" + t.textContent + "'");
      for (var k = j + 1; k < texts.length; k++)
        if (cross(rects[j], rects[k], 1))
          out.overlaps.push(name(svg) + ": '" + t.textContent + "' / '" + texts[k].textContent + "'");
    });
    // A heat map's measured cells carry a tooltip; the value is in data-v.
    var cells = Array.prototype.filter.call(svg.querySelectorAll("rect"), function (c) {
      return shown(c) && svg.getAttribute("class") === "heatmap" && c.querySelector("title");
    });
    cells.forEach(function (c, j) {
      var r = c.getBoundingClientRect(), v = value(c);
      out.cells++;
      var labelled = texts.some(function (t, k) {
        var x = (rects[k].left + rects[k].right) / 2, y = (rects[k].top + rects[k].bottom) / 2;
        return x > r.left && x < r.right && y > r.top && y < r.bottom && inside(rects[k], r, 1) &&
          parseFloat(t.textContent) > 0;
      });
      if (!labelled) out.unlabelled.push(name(svg) + ": the cell of " + v);
      // Two cells within 5% of each other must look alike.
      for (var k = j + 1; k < cells.length; k++) {
        var w = value(cells[k]), p = rgb(c.getAttribute("fill")),
          q = rgb(cells[k].getAttribute("fill"));
        if (p && q && Math.abs(v - w) <= 0.05 * Math.max(v, w) &&
            Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]) > 40)
          out.noisy.push(name(svg) + ": " + v + " and " + w + " differ by " +
            (100 * Math.abs(v - w) / Math.max(v, w)).toFixed(1) + "% but not alike in colour");
      }
    });
    var edges = svg.getAttribute("class") === "topology" ? svg.querySelectorAll("line") : [];
    Array.prototype.filter.call(edges, shown).forEach(function (l) {
      var a = l.getAttribute("data-a"), b = l.getAttribute("data-b");
      out.edges++;
      [[a, b], [b, a]].forEach(function (d) {
        var n = svg.querySelector('text.edge[data-from="' + d[0] + '"][data-to="' + d[1] + '"]');
        if (n && shown(n)) out.edge_numbers++;
        else out.missing_directions++;
      });
    });
    Array.prototype.forEach.call(svg.querySelectorAll("text[data-left-off]"), function (t) {
      out.left_off += parseInt(t.getAttribute("data-left-off"), 10);
    });
  });
  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
