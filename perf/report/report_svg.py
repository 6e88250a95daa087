# SPDX-License-Identifier: MIT
"""SVG drawing for perf/report/report: line plots with log axes, heat maps, a
topology graph and a step-by-step schedule animation, all written as plain
SVG text so the page needs no script library and no network."""

import html
import math

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


def esc(text):
    return html.escape(str(text), quote=True)


def fmt_bytes(b):
    b = float(b)
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            v = b / scale
            return ("%d%s" % (v, unit)) if v == int(v) else ("%.1f%s" % (v, unit))
    return "%d" % b


def fmt_num(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3g" % v


def _log_ticks(lo, hi, base):
    """Ticks at powers of base (2 for bytes, 10 otherwise), thinned to about 8."""
    if lo <= 0 or hi <= 0:
        return []
    a, b = math.floor(math.log(lo, base) + 1e-9), math.ceil(math.log(hi, base) - 1e-9)
    ticks = [base ** k for k in range(a, b + 1)]
    step = max(1, len(ticks) // 8)
    return ticks[::step]


def _lin_ticks(lo, hi):
    span = hi - lo if hi > lo else 1.0
    raw = span / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=mag)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-12:
        out.append(t)
        t += step
    return out


class Plot:
    """A line or point plot; x and y may be logarithmic."""

    def __init__(self, title, xlabel, ylabel, logx=True, logy=True, bytes_x=True, width=600, height=360,
                 ident=None):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.logx, self.logy, self.bytes_x = logx, logy, bytes_x
        self.w, self.h, self.ident = width, height, ident
        self.series = []

    def add(self, label, xs, ys, dashed=False, points=False, band=None):
        pts = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None and
               (not self.logx or x > 0) and (not self.logy or y > 0) and math.isfinite(y)]
        if pts:
            self.series.append((label, pts, dashed, points, band))

    def svg(self):
        m = {"l": 64, "r": 150, "t": 28, "b": 44}
        pw, ph = self.w - m["l"] - m["r"], self.h - m["t"] - m["b"]
        xs = [p[0] for s in self.series for p in s[1]]
        ys = [p[1] for s in self.series for p in s[1]]
        for s in self.series:
            if s[4]:
                ys += [v for v in s[4][0] + s[4][1] if v and v > 0]
        out = ['<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="%d" height="%d"%s>' %
               (self.w, self.h, ' id="%s"' % esc(self.ident) if self.ident else "")]
        out.append('<text x="%d" y="18" class="title">%s</text>' % (m["l"], esc(self.title)))
        if not xs:
            out.append('<text x="%d" y="%d">no data</text></svg>' % (m["l"], m["t"] + 40))
            return "".join(out)
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        if self.logy:
            y0, y1 = y0 / 1.3, y1 * 1.3
        else:
            y0, y1 = min(0.0, y0), y1 * 1.1 if y1 > 0 else 1.0
        if x0 == x1:
            x0, x1 = (x0 / 2, x1 * 2) if self.logx else (x0 - 1, x1 + 1)
        if y0 == y1:
            y0, y1 = (y0 / 2, y1 * 2) if self.logy else (y0 - 1, y1 + 1)

        def sx(x):
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) if self.logx else (x - x0) / (x1 - x0)
            return m["l"] + f * pw

        def sy(y):
            f = (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) if self.logy else (y - y0) / (y1 - y0)
            return m["t"] + ph - f * ph

        out.append('<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>' % (m["l"], m["t"], pw, ph))
        xt = _log_ticks(x0, x1, 2 if self.bytes_x else 10) if self.logx else _lin_ticks(x0, x1)
        for t in xt:
            if x0 <= t <= x1:
                out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="grid"/>' % (sx(t), sx(t), m["t"], m["t"] + ph))
                label = fmt_bytes(t) if self.bytes_x else fmt_num(t)
                out.append('<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>' %
                           (sx(t), m["t"] + ph + 14, esc(label)))
        yt = _log_ticks(y0, y1, 10) if self.logy else _lin_ticks(y0, y1)
        if self.logy and len(yt) < 3:
            yt = sorted(set(yt + [v * k for v in yt for k in (2, 5)]))
        for t in yt:
            if y0 <= t <= y1:
                out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>' % (m["l"], m["l"] + pw, sy(t), sy(t)))
                out.append('<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>' %
                           (m["l"] - 4, sy(t) + 4, esc(fmt_num(t))))
        out.append('<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>' %
                   (m["l"] + pw / 2, self.h - 8, esc(self.xlabel)))
        out.append('<text x="14" y="%.1f" class="axis" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>' %
                   (m["t"] + ph / 2, m["t"] + ph / 2, esc(self.ylabel)))
        for i, (label, pts, dashed, points, band) in enumerate(self.series):
            color = PALETTE[i % len(PALETTE)]
            if band:
                lo, hi = band
                top = [(sx(x), sy(v)) for (x, _), v in zip(pts, hi) if v and v > 0]
                bot = [(sx(x), sy(v)) for (x, _), v in zip(pts, lo) if v and v > 0]
                if top and bot:
                    poly = " ".join("%.1f,%.1f" % p for p in top + bot[::-1])
                    out.append('<polygon points="%s" fill="%s" opacity="0.15"/>' % (poly, color))
            path = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts)
            if not points:
                out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' %
                           (path, color, ' stroke-dasharray="6 4"' if dashed else ""))
            for x, y in pts:
                out.append('<circle cx="%.1f" cy="%.1f" r="%s" fill="%s"><title>%s: %s, %s</title></circle>' %
                           (sx(x), sy(y), "3" if points else "2", color, esc(label),
                            esc(fmt_bytes(x) if self.bytes_x else fmt_num(x)), esc(fmt_num(y))))
            ly = m["t"] + 12 + 16 * i
            out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' %
                       (m["l"] + pw + 8, m["l"] + pw + 26, ly - 4, ly - 4, color,
                        ' stroke-dasharray="6 4"' if dashed else ""))
            out.append('<text x="%d" y="%d" class="legend">%s</text>' % (m["l"] + pw + 30, ly, esc(label)))
        out.append("</svg>")
        return "".join(out)


def _ramp(f):
    """A perceptual ramp from dark blue (0) through green to yellow (1)."""
    stops = [(0.0, (68, 1, 84)), (0.25, (59, 82, 139)), (0.5, (33, 145, 140)), (0.75, (94, 201, 98)),
             (1.0, (253, 231, 37))]
    f = min(1.0, max(0.0, f))
    for (a, ca), (b, cb) in zip(stops, stops[1:]):
        if f <= b:
            t = (f - a) / (b - a)
            return "#%02x%02x%02x" % tuple(int(ca[k] + (cb[k] - ca[k]) * t) for k in range(3))
    return "#fde725"


def heatmap(title, values, labels, unit, higher_better=True, classes=None, ident=None, cell=52):
    """values[a][b] (None: no measurement); the brightest cell is the best."""
    n = len(values)
    flat = [v for row in values for v in row if v is not None]
    lo, hi = (min(flat), max(flat)) if flat else (0, 1)
    left, top = 48, 40
    w, h = left + cell * n + 120, top + cell * n + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="%d" height="%d"%s>' %
           (w, h, ' id="%s"' % esc(ident) if ident else "")]
    out.append('<text x="4" y="16" class="title">%s</text>' % esc(title))
    for i, lab in enumerate(labels):
        out.append('<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>' %
                   (left - 6, top + cell * i + cell / 2 + 4, esc(lab)))
        out.append('<text x="%d" y="%d" class="tick" text-anchor="middle">%s</text>' %
                   (left + cell * i + cell / 2, top - 4 + 0, esc(lab)))
    for a in range(n):
        for b in range(n):
            v = values[a][b]
            x, y = left + cell * b, top + cell * a
            if v is None:
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#eeeeee" stroke="#fff"/>' % (x, y, cell, cell))
                out.append('<text x="%d" y="%d" class="cell" text-anchor="middle" fill="#999">%s</text>' %
                           (x + cell / 2, y + cell / 2 + 4, "X" if a == b else "-"))
                continue
            f = (v - lo) / (hi - lo) if hi > lo else 1.0
            f = f if higher_better else 1 - f
            color = _ramp(f)
            ink = "#000" if f > 0.55 else "#fff"
            tip = "%s -> %s: %s %s%s" % (labels[a], labels[b], fmt_num(v), unit,
                                          (" (%s)" % classes[a][b]) if classes else "")
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"><title>%s</title></rect>' %
                       (x, y, cell, cell, color, esc(tip)))
            out.append('<text x="%d" y="%d" class="cell" text-anchor="middle" fill="%s">%s</text>' %
                       (x + cell / 2, y + cell / 2 + 2, ink, esc(fmt_num(v))))
            if classes:
                out.append('<text x="%d" y="%d" class="cls" text-anchor="middle" fill="%s">%s</text>' %
                           (x + cell / 2, y + cell / 2 + 14, ink, esc(classes[a][b])))
    # the scale
    sx0 = left + cell * n + 20
    for k in range(20):
        f = k / 19.0
        out.append('<rect x="%d" y="%.1f" width="14" height="%.1f" fill="%s"/>' %
                   (sx0, top + cell * n * (1 - f) - cell * n / 20, cell * n / 20 + 0.5,
                    _ramp(f)))
    best, worst = (hi, lo) if higher_better else (lo, hi)
    out.append('<text x="%d" y="%d" class="tick">%s %s</text>' % (sx0 + 18, top + 8, esc(fmt_num(best)), esc(unit)))
    out.append('<text x="%d" y="%d" class="tick">%s %s</text>' % (sx0 + 18, top + cell * n, esc(fmt_num(worst)), esc(unit)))
    out.append("</svg>")
    return "".join(out)


def topology(title, hosts, edges, ident=None, width=640, height=420):
    """hosts: [(name, [rank labels])]; edges: [(a, b, gbps, color, label)] between rank labels."""
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="topology" width="%d" height="%d"%s>' %
           (width, height, ' id="%s"' % esc(ident) if ident else "")]
    out.append('<text x="6" y="18" class="title">%s</text>' % esc(title))
    pos, nh = {}, max(1, len(hosts))
    cx0, cy0 = width / 2, height / 2 + 10
    big = 0 if nh == 1 else min(width, height) * 0.28
    for h, (name, ranks) in enumerate(hosts):
        ang = 2 * math.pi * h / nh - math.pi / 2
        hx, hy = cx0 + big * math.cos(ang), cy0 + big * math.sin(ang)
        r = (min(width, height) * (0.33 if nh == 1 else 0.13)) if len(ranks) > 1 else 0
        box = r + 26
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="14" class="host"/>' %
                   (hx - box, hy - box, 2 * box, 2 * box))
        out.append('<text x="%.1f" y="%.1f" class="tick" text-anchor="middle">%s</text>' % (hx, hy - box - 4, esc(name)))
        for i, rank in enumerate(ranks):
            a = 2 * math.pi * i / max(1, len(ranks)) - math.pi / 2
            pos[rank] = (hx + r * math.cos(a), hy + r * math.sin(a))
    top = max([e[2] for e in edges if e[2]] or [1])
    for a, b, gbps, color, label in edges:
        if a not in pos or b not in pos or not gbps:
            continue
        (x1, y1), (x2, y2) = pos[a], pos[b]
        width_px = 1 + 6 * gbps / top
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f" opacity="0.7">'
                   '<title>%s</title></line>' % (x1, y1, x2, y2, color, width_px, esc(label)))
        out.append('<text x="%.1f" y="%.1f" class="edge" text-anchor="middle">%s</text>' %
                   ((x1 + x2) / 2, (y1 + y2) / 2 - 3, esc(fmt_num(gbps))))
    for rank, (x, y) in pos.items():
        out.append('<circle cx="%.1f" cy="%.1f" r="15" class="rank"/>' % (x, y))
        out.append('<text x="%.1f" y="%.1f" class="ranklabel" text-anchor="middle">%s</text>' % (x, y + 4, esc(rank)))
    out.append("</svg>")
    return "".join(out)
