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


def text_px(text, size, bold=False):
    """A generous estimate of how wide text is drawn in a sans-serif font of
    size px (DejaVu Sans's advances, the widest of the common fonts), so that
    layouts leave room without a browser to measure with."""
    w = 0.0
    for ch in str(text):
        if ch in "mwMW%@":
            w += 0.95
        elif ch.isupper():
            w += 0.74
        elif ch.isdigit():
            w += 0.64
        elif ch in " .,:;'|!iljtf()[]-":
            w += 0.38
        else:
            w += 0.62
    return w * size * (1.1 if bold else 1.0)


def wrap(text, px, size, bold=False):
    """text cut at spaces into lines no wider than px (a longer word stands alone)."""
    lines, line = [], ""
    for word in str(text).split():
        trial = (line + " " + word).strip()
        if line and text_px(trial, size, bold) > px:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


def title_lines(text, x, y, px, size=13, cls="title"):
    """A title wrapped to px: the SVG text and the y below its last line."""
    lines = wrap(text, px, size, bold=True)
    out = "".join('<text x="%d" y="%d" class="%s">%s</text>' % (x, y + 16 * i, cls, esc(l))
                  for i, l in enumerate(lines))
    return out, y + 16 * (len(lines) - 1)


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
        # The legend's column fits its longest label, the title wraps, and
        # the plot grows to hold every legend line.
        legend = max([text_px(s[0], 11) for s in self.series] + [80])
        head, last = title_lines(self.title, 64, 18, self.w - 70)
        m = {"l": 64, "r": int(legend) + 40, "t": last + 10, "b": 44}
        self.h = max(self.h, m["t"] + 16 * len(self.series) + 8 + m["b"])
        pw, ph = self.w - m["l"] - m["r"], self.h - m["t"] - m["b"]
        xs = [p[0] for s in self.series for p in s[1]]
        ys = [p[1] for s in self.series for p in s[1]]
        for s in self.series:
            if s[4]:
                ys += [v for v in s[4][0] + s[4][1] if v and v > 0]
        out = ['<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="%d" height="%d"%s>' %
               (self.w, self.h, ' id="%s"' % esc(self.ident) if self.ident else ""), head]
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
    """values[a][b] (None: no measurement); the brightest cell is the best. The
    colour is the share of the best a cell reaches, on a scale from 0, so
    cells that differ by noise look alike and only a real difference (a
    slow rank, another link class) stands out."""
    n = len(values)
    flat = [v for row in values for v in row if v is not None and v > 0]
    # Every cell is coloured by the share of the best it reaches: v / best
    # for bandwidth, best / v for latency.
    best = (max(flat) if higher_better else min(flat)) if flat else 1.0
    share = (lambda v: v / best) if higher_better else (lambda v: best / v if v > 0 else 0.0)
    words = [fmt_num(v) for v in flat] + [c for row in (classes or []) for c in row]
    cell = max([cell] + [text_px(w, 11) + 10 for w in words])
    left = max([48] + [text_px(lab, 11) + 14 for lab in labels])
    marks = [(1.0, "%s %s" % (fmt_num(best), unit))]
    marks += [(0.0, "0 %s" % unit)] if higher_better else [(0.5, "%s %s" % (fmt_num(2 * best), unit)),
                                                           (0.0, "slower")]
    legend = 20 + 18 + max(text_px(e, 11) for _, e in marks) + 6
    w = int(max(left + cell * n + legend, min(text_px(title, 13, True) + 12, 440)))
    head, last = title_lines(title, 4, 16, w - 8)
    top = last + 26
    h = top + cell * n + 10
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="%d" height="%d"%s>' %
           (w, h, ' id="%s"' % esc(ident) if ident else ""), head]
    for i, lab in enumerate(labels):
        out.append('<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>' %
                   (left - 6, top + cell * i + cell / 2 + 4, esc(lab)))
        out.append('<text x="%d" y="%d" class="tick" text-anchor="middle">%s</text>' %
                   (left + cell * i + cell / 2, top - 5, esc(lab)))
    for a in range(n):
        for b in range(n):
            v = values[a][b]
            x, y = left + cell * b, top + cell * a
            if v is None:
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#eeeeee" stroke="#fff"/>' % (x, y, cell, cell))
                out.append('<text x="%d" y="%d" class="cell" text-anchor="middle" fill="#999">%s</text>' %
                           (x + cell / 2, y + cell / 2 + 4, "X" if a == b else "-"))
                continue
            f = share(v)
            ink = "#000" if f > 0.55 else "#fff"
            tip = "%s -> %s: %s %s%s" % (labels[a], labels[b], fmt_num(v), unit,
                                          (" (%s)" % classes[a][b]) if classes else "")
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff" class="hm-cell" '
                       'data-v="%g"><title>%s</title></rect>' % (x, y, cell, cell, _ramp(f), v, esc(tip)))
            out.append('<text x="%d" y="%d" class="cell" text-anchor="middle" fill="%s">%s</text>' %
                       (x + cell / 2, y + cell / 2 + 2, ink, esc(fmt_num(v))))
            if classes:
                out.append('<text x="%d" y="%d" class="cls" text-anchor="middle" fill="%s">%s</text>' %
                           (x + cell / 2, y + cell / 2 + 14, ink, esc(classes[a][b])))
    sx0 = left + cell * n + 20
    for k in range(20):
        f = k / 19.0
        out.append('<rect x="%d" y="%.1f" width="14" height="%.1f" fill="%s"/>' %
                   (sx0, top + cell * n * (1 - f) - cell * n / 20, cell * n / 20 + 0.5, _ramp(f)))
    for f, text in marks:
        out.append('<text x="%d" y="%.1f" class="tick">%s</text>' %
                   (sx0 + 18, top + 8 + (cell * n - 8) * (1 - f), esc(text)))
    out.append("</svg>")
    return "".join(out)


class _Boxes:
    """Boxes already drawn on a figure, so that a new label goes where it
    overlaps none of them (or is left off)."""

    def __init__(self, width, height):
        self.w, self.h, self.taken = width, height, []

    def take(self, x0, y0, x1, y1):
        self.taken.append((x0, y0, x1, y1))

    def free(self, x0, y0, x1, y1):
        if x0 < 2 or y0 < 2 or x1 > self.w - 2 or y1 > self.h - 2:
            return False
        return all(x1 <= a0 or x0 >= a1 or y1 <= b0 or y0 >= b1 for a0, b0, a1, b1 in self.taken)


def _rank_positions(hosts, width, height, top):
    """Ranks on a circle per host, hosts side by side (two) or on a circle:
    {rank label: (x, y)} and the host boxes (name, centre x, y, half size)."""
    pos, boxes, nh = {}, [], max(1, len(hosts))
    cy0, room = (top + height) / 2, min(width, height - top)
    for h, (name, ranks) in enumerate(hosts):
        if nh <= 2:
            hx, hy = width * (2 * h + 1) / (2 * nh), cy0
            box = min(width / (2 * nh) - 8, (height - top) / 2 - 18)
        else:
            ang = 2 * math.pi * h / nh - math.pi / 2
            hx, hy = width / 2 + room * 0.28 * math.cos(ang), cy0 + room * 0.28 * math.sin(ang)
            box = room * 0.13 + 26
        r = box - 26 if len(ranks) > 1 else 0
        boxes.append((name, hx, hy, box))
        for i, rank in enumerate(ranks):
            a = 2 * math.pi * i / max(1, len(ranks)) - math.pi / 2
            pos[rank] = (hx + r * math.cos(a), hy + r * math.sin(a))
    return pos, boxes


def _edge_label(boxes, src, dst, text):
    """Where the label of what src sends to dst goes: on the edge, nearer
    src, the first spot that overlaps nothing drawn; None when there is none."""
    (x1, y1), (x2, y2) = src, dst
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    nx, ny = -(y2 - y1) / length, (x2 - x1) / length
    half_w, half_h = text_px(text, 10) / 2 + 2, 7
    for t in (0.3, 0.24, 0.36, 0.18, 0.42):
        for off in (0, 9, -9, 16, -16):
            x, y = x1 + (x2 - x1) * t + nx * off, y1 + (y2 - y1) * t + ny * off
            box = (x - half_w, y - half_h, x + half_w, y + half_h)
            if math.hypot(x - x1, y - y1) > 22 and boxes.free(*box):
                boxes.take(*box)
                return x, y
    return None


def topology(title, hosts, edges, ident=None, width=640, height=440):
    """hosts: [(name, [rank labels])]; edges: [(a, b, a_to_b, b_to_a, color, tip)]
    between rank labels, GB/s one way (None: not measured). Each edge carries
    both directions: the number nearer a rank is what that rank sends."""
    head, last = title_lines(title, 6, 18, width - 12)
    pos, hboxes = _rank_positions(hosts, width, height - 18, last + 30)
    boxes = _Boxes(width, height)
    boxes.take(0, 0, width, last + 6)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="topology" width="%d" height="%d"%s>' %
           (width, height, ' id="%s"' % esc(ident) if ident else ""), head]
    for name, hx, hy, box in hboxes:
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="14" class="host"/>' %
                   (hx - box, hy - box, 2 * box, 2 * box))
        out.append('<text x="%.1f" y="%.1f" class="tick" text-anchor="middle">%s</text>' %
                   (hx, hy - box - 4, esc(name)))
        tw = text_px(name, 11) / 2
        boxes.take(hx - tw, hy - box - 16, hx + tw, hy - box)
    for x, y in pos.values():
        boxes.take(x - 17, y - 17, x + 17, y + 17)
    top = max([max(e[2] or 0, e[3] or 0) for e in edges] or [1]) or 1
    labels, left_off = [], 0
    for a, b, ab, ba, color, tip in edges:
        if a not in pos or b not in pos or not (ab or ba):
            continue
        both = [v for v in (ab, ba) if v]
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f" opacity="0.7" '
                   'class="link" data-a="%s" data-b="%s"><title>%s</title></line>' %
                   (pos[a][0], pos[a][1], pos[b][0], pos[b][1], color, 1 + 6 * sum(both) / len(both) / top,
                    esc(a), esc(b), esc(tip)))
        for src, dst, v in ((a, b, ab), (b, a, ba)):
            if not v:
                continue
            spot = _edge_label(boxes, pos[src], pos[dst], fmt_num(v))
            if spot is None:
                left_off += 1
                continue
            labels.append('<text x="%.1f" y="%.1f" class="edge" text-anchor="middle" data-from="%s" data-to="%s">'
                          '%s<title>%s sends to %s: %s GB/s</title></text>' %
                          (spot[0], spot[1] + 3.5, esc(src), esc(dst), esc(fmt_num(v)), esc(src), esc(dst), fmt_num(v)))
    out.extend(labels)  # over every line, so no line crosses a number
    for rank, (x, y) in pos.items():
        out.append('<circle cx="%.1f" cy="%.1f" r="15" class="rank"/>' % (x, y))
        out.append('<text x="%.1f" y="%.1f" class="ranklabel" text-anchor="middle">%s</text>' % (x, y + 4, esc(rank)))
    if left_off:
        out.append('<text x="6" y="%d" class="tick" data-left-off="%d">%d numbers left off for room (the one-way '
                   'matrix has every pair)</text>' % (height - 6, left_off, left_off))
    out.append("</svg>")
    return "".join(out)
