// SPDX-License-Identifier: MIT
// The step-by-step picture of a schedule (tutti-explain --json), shared by
// tutti-explain --html's page and tutti-report's animations: pick the
// algorithm, the ranks and the size among the documents given; step forward
// and back (buttons, arrow keys) or play. Each algorithm is drawn in the
// shape its messages make: ranks on a circle (a ring shows as one), trees
// by level from the root down, a butterfly of ranks against steps. Every
// arrow is labelled with the chunk and partial sum it carries; a label that
// would cover another is replaced by its number in the list below the
// picture. No network, no server: it runs from a file.
"use strict";

function tuttiExplain(root, data) {
  const NS = "http://www.w3.org/2000/svg", id = root.id;
  const docs = data.docs, all = (key) => [...new Set(docs.map((d) => d[key]))].sort((a, b) => a - b);
  const algos = [...new Set(docs.map((d) => d.algorithm))];
  const state = Object.assign({algorithm: docs[0].algorithm, nranks: docs[0].nranks, bytes: docs[0].bytes, step: 0},
                              data.initial || {});
  let timer = null;

  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svgEl = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const bytesText = (b) => b >= 1 << 30 && b % (1 << 30) == 0 ? b / (1 << 30) + " GiB"
      : b >= 1 << 20 && b % (1 << 20) == 0 ? b / (1 << 20) + " MiB"
      : b >= 1024 && b % 1024 == 0 ? b / 1024 + " KiB" : b + " B";
  const usText = (us) => us >= 1000 ? (us / 1000).toFixed(2) + " ms" : us.toFixed(1) + " us";
  const letter = (r) => r < 26 ? String.fromCharCode(97 + r) : "r" + r;

  // The controls, the words, the picture and the lists below it.
  root.classList.add("tx");
  const select = (what, key, values, show) => {
    const s = el("select", {id: id + "-" + what, "aria-label": what});
    for (const v of values) s.appendChild(el("option", {value: v}, show(v)));
    s.addEventListener("change", () => {
      state[key] = key === "algorithm" ? s.value : Number(s.value);
      state.step = 0;
      draw();
    });
    return s;
  };
  const button = (what, text, fn) => {
    const b = el("button", {id: id + "-" + what, type: "button"}, text);
    b.addEventListener("click", fn);
    return b;
  };
  const bar = el("div", {class: "tx-bar"});
  const pickAlgo = select("algo", "algorithm", algos, (a) => a);
  const pickRanks = select("ranks", "nranks", all("nranks"), (p) => p + " ranks");
  const pickSize = select("size", "bytes", all("bytes"), bytesText);
  const stepText = el("span", {id: id + "-step", class: "tx-step"});
  bar.append("algorithm ", pickAlgo, " ", pickRanks, " ", pickSize, " ",
             button("back", "\u25c0 back", () => go(-1)), button("forward", "forward \u25b6", () => go(1)),
             button("play", "play", () => play()), " ", stepText);
  for (const s of [pickAlgo, pickRanks, pickSize]) if (s.options.length < 2) s.disabled = true;
  const words = el("div", {class: "tx-words"}), fold = el("p", {class: "tx-note"});
  const picture = svgEl("svg", {id: id + "-picture", class: "tx-picture"});
  const said = el("ol", {id: id + "-messages", class: "tx-messages"}), work = el("div", {class: "tx-work"});
  const grid = el("div", {class: "tx-grid"});
  root.append(bar, words, fold, picture, el("h4", {}, "messages of this step"), said,
              el("h4", {}, "what each rank does"), work, grid);
  root.tabIndex = 0;
  root.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight") go(1);
    if (e.key === "ArrowLeft") go(-1);
  });

  function current() {
    const fits = (d, keys) => keys.every((k) => d[k] === state[k]);
    return docs.find((d) => fits(d, ["algorithm", "nranks", "bytes"])) ||
           docs.find((d) => fits(d, ["algorithm", "nranks"])) || docs.find((d) => fits(d, ["algorithm"])) || docs[0];
  }
  function go(delta) {
    const n = current().steps.length;
    state.step = (state.step + delta + n) % n;
    draw();
  }
  function play() {
    if (timer) {
      clearInterval(timer);
      timer = null;
    } else {
      timer = setInterval(() => go(1), 1500);
    }
    root.querySelector("#" + id + "-play").textContent = timer ? "pause" : "play";
  }

  // One arrow per sender, receiver (and tree) in a step, carrying all they
  // sent; on the picture a short form: a chunk's terms name it (c3+d3),
  // runs of chunks holding the same ranks' terms merge (0-5: a+e).
  function brief(what) {
    const runs = [];
    for (const [, lo, hi, terms] of what.matchAll(/chunks? (\d+)(?:-(\d+))? \[([^\]]*)\]/g)) {
      const letters = terms.replace(/ \(\d+ terms\)/, "").replace(/\.\.\./g, "\u2026").replace(/(\D)\d+/g, "$1");
      const last = runs[runs.length - 1], from = Number(lo), to = Number(hi || lo);
      if (last && last.letters === letters && last.to + 1 === from) last.to = to;
      else runs.push({from: from, to: to, letters: letters, terms: terms.replace(/ \(\d+ terms\)/, "")});
    }
    if (!runs.length) return what;
    return runs.map((r) => r.from === r.to && /\d/.test(r.terms) ? r.terms.replace(/\.\.\./g, "\u2026")
                                                                 : `${r.from}-${r.to}: ${r.letters}`).join(", ");
  }
  function arrows(step) {
    const byPair = new Map();
    for (const m of step.messages) {
      const key = m.from + ">" + m.to + ">" + (m.tree || 0);
      if (!byPair.has(key)) byPair.set(key, {from: m.from, to: m.to, tree: m.tree || 0, carries: []});
      byPair.get(key).carries.push(m.carries);
    }
    return [...byPair.values()].map((a, i) =>
        Object.assign(a, {n: i + 1, full: a.carries.join(", "), text: brief(a.carries.join(", "))}));
  }

  // Labels are placed one by one where they cover no other label and no
  // rank; where none of the places fits, the arrow gets its number instead.
  const placed = [];
  const overlaps = (b) => placed.some((p) => b.x < p.x + p.width && p.x < b.x + b.width &&
                                            b.y < p.y + p.height && p.y < b.y + b.height);
  function keep(box, pad) {
    placed.push({x: box.x - pad, y: box.y - pad, width: box.width + 2 * pad, height: box.height + 2 * pad});
  }
  function label(g, a, spots) {
    for (const text of [a.text, String(a.n)]) {
      for (const [x, y] of spots) {
        const t = svgEl("text", {x: x, y: y, class: "tx-label", "text-anchor": "middle"}, text);
        g.appendChild(t);
        const b = t.getBBox();
        if (!overlaps(b)) {
          keep(b, 1);
          const back = svgEl("rect", {x: b.x - 1, y: b.y, width: b.width + 2, height: b.height, class: "tx-labelback"});
          g.insertBefore(back, t);
          return;
        }
        g.removeChild(t);
      }
    }
  }
  function node(g, x, y, r, cls, tree) {
    const c = svgEl("g", {class: "tx-node " + (cls || ""), "data-rank": r});
    if (tree !== undefined) c.setAttribute("data-tree", tree);
    c.appendChild(svgEl("circle", {cx: x, cy: y, r: 13}));
    c.appendChild(svgEl("text", {x: x, y: y + 4, "text-anchor": "middle", class: "tx-rank"}, r));
    g.appendChild(c);
    keep({x: x - 13, y: y - 13, width: 26, height: 26}, 0);
  }
  // A curved arrow from (x1,y1) to (x2,y2), ends kept off the rank circles;
  // the label's candidate places lie along it, either side.
  function arrow(g, a, x1, y1, x2, y2, bend, cls) {
    const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1, ux = dx / len, uy = dy / len;
    const sx = x1 + ux * 15, sy = y1 + uy * 15, ex = x2 - ux * 17, ey = y2 - uy * 17;
    const cx = (sx + ex) / 2 - uy * bend * len, cy = (sy + ey) / 2 + ux * bend * len;
    const path = svgEl("path", {d: `M${sx},${sy} Q${cx},${cy} ${ex},${ey}`, class: "tx-arrow " + (cls || ""),
                                "marker-end": `url(#${id}-head)`, "data-from": a.from, "data-to": a.to});
    path.appendChild(svgEl("title", {}, `rank ${a.from} to rank ${a.to}: ${a.full}`));
    g.appendChild(path);
    const at = (t) => [(1 - t) * (1 - t) * sx + 2 * t * (1 - t) * cx + t * t * ex,
                       (1 - t) * (1 - t) * sy + 2 * t * (1 - t) * cy + t * t * ey];
    const spots = [];
    for (const t of [0.5, 0.35, 0.65, 0.2, 0.8])
      for (const side of [1, -1, 2.2, -2.2]) {
        const [px, py] = at(t);
        spots.push([px - uy * 9 * side * Math.sign(bend || 1), py + ux * 9 * side * Math.sign(bend || 1) + 4]);
      }
    return spots;
  }

  function drawCircle(g, doc, step) {
    const p = doc.nranks, R = Math.max(110, p * 24), cx = R, cy = R;
    const pos = (r) => [cx + R * Math.cos(-Math.PI / 2 + 2 * Math.PI * r / p),
                        cy + R * Math.sin(-Math.PI / 2 + 2 * Math.PI * r / p)];
    const pairs = new Set();
    for (const s of doc.steps) for (const m of s.messages) pairs.add(Math.min(m.from, m.to) + "-" + Math.max(m.from, m.to));
    for (const pr of pairs) {
      const [a, b] = pr.split("-").map(Number), [x1, y1] = pos(a), [x2, y2] = pos(b);
      g.appendChild(svgEl("line", {x1: x1, y1: y1, x2: x2, y2: y2, class: "tx-edge", "data-from": a, "data-to": b}));
    }
    const hosts = doc.shape.host;
    for (let r = 0; r < p; r++) node(g, ...pos(r), r, "tx-host" + (hosts[r] % 4));
    const spots = arrows(step).map((a) => [a, arrow(g, a, ...pos(a.from), ...pos(a.to), 0.12)]);
    for (const [a, s] of spots) label(g, a, s);
  }

  function drawTrees(g, doc, step) {
    const trees = doc.shape.trees, levelH = 78, top = 56, list = arrows(step), spots = [];
    let left = 0;
    trees.forEach((t, k) => {
      const leaves = t.parent.filter((_, r) => !t.parent.includes(r)).length;
      const width = Math.max(160, leaves * 70), x0 = left + 70;
      const pos = (r) => [x0 + t.x[r] * width, top + t.depth[r] * levelH];
      const depth = Math.max(...t.depth);
      g.appendChild(svgEl("text", {x: left + 8, y: 22, class: "tx-title"},
                          trees.length > 1 ? `tree ${k + 1}: chunks ${t.chunks}` : `tree from rank ${t.root}`));
      for (let d = 0; d <= depth; d++)
        g.appendChild(svgEl("text", {x: left + 8, y: top + d * levelH + 4, class: "tx-level"}, d ? "level " + d : "root"));
      for (let r = 0; r < doc.nranks; r++)
        if (t.parent[r] >= 0)
          g.appendChild(svgEl("line", {x1: pos(r)[0], y1: pos(r)[1], x2: pos(t.parent[r])[0], y2: pos(t.parent[r])[1],
                                       class: "tx-edge", "data-from": r, "data-to": t.parent[r], "data-tree": k}));
      for (let r = 0; r < doc.nranks; r++) node(g, ...pos(r), r, "tx-tree" + k, k);
      for (const a of list.filter((a) => a.tree === k)) spots.push([a, arrow(g, a, ...pos(a.from), ...pos(a.to), 0.18)]);
      left += width + 140;
    });
    for (const [a, s] of spots) label(g, a, s);
  }

  function drawButterfly(g, doc, step, k) {
    const p = doc.nranks, n = doc.steps.length, colW = 150, rowH = 36, left = 80, top = 44;
    const pos = (r, c) => [left + c * colW, top + r * rowH];
    for (let c = 0; c < n; c++)
      g.appendChild(svgEl("text", {x: left + c * colW + colW / 2, y: 18, "text-anchor": "middle",
                                   class: c === k ? "tx-title" : "tx-level"}, "step " + (c + 1)));
    for (let r = 0; r < p; r++) {
      g.appendChild(svgEl("text", {x: 4, y: top + r * rowH + 4, class: "tx-level"}, `rank ${r} (${letter(r)})`));
      g.appendChild(svgEl("line", {x1: left, y1: top + r * rowH, x2: left + n * colW, y2: top + r * rowH, class: "tx-edge"}));
    }
    const spots = [];
    doc.steps.forEach((s, c) => {
      for (const a of arrows(s)) {
        const [x1, y1] = pos(a.from, c), [x2, y2] = pos(a.to, c + 1);
        if (c !== k) {
          g.appendChild(svgEl("line", {x1: x1, y1: y1, x2: x2, y2: y2, class: c < k ? "tx-past" : "tx-future"}));
        } else {
          spots.push([a, arrow(g, a, x1, y1, x2, y2, 0)]);
        }
      }
    });
    for (let c = 0; c <= n; c++) for (let r = 0; r < p; r++) node(g, ...pos(r, c), r, c === k || c === k + 1 ? "" : "tx-dim");
    for (const [a, s] of spots) label(g, a, s);
  }

  function drawGrid(doc, step) {
    const table = el("table", {class: "tx-cells"}), head = el("tr");
    head.appendChild(el("th", {}, "after this step"));
    (step.grid[0] || []).forEach((_, c) => head.appendChild(el("th", {}, "chunk " + c)));
    table.appendChild(head);
    step.grid.forEach((row, r) => {
      const tr = el("tr");
      tr.appendChild(el("th", {}, `rank ${r} (${letter(r)})`));
      for (const cell of row) {
        const share = cell === "S" ? 1 : cell === "." ? 0 : cell.length / doc.nranks;
        const td = el("td", {title: cell === "S" ? "every rank's terms" : cell === "." ? "nothing yet" : cell}, cell);
        td.style.background = `hsl(210, 70%, ${96 - 56 * share}%)`;
        td.style.color = share > 0.6 ? "#fff" : "#000";
        tr.appendChild(td);
      }
      table.appendChild(tr);
    });
    grid.replaceChildren(el("p", {class: "tx-note"}, "Each rank's output by chunk: the letters of the ranks whose " +
                                 "terms it holds (S: every rank's, .: nothing yet)."), table);
  }

  function draw() {
    const doc = current(), steps = doc.steps, k = Math.min(state.step, steps.length - 1), step = steps[k];
    Object.assign(state, {algorithm: doc.algorithm, nranks: doc.nranks, bytes: doc.bytes, step: k});
    pickAlgo.value = doc.algorithm;
    pickRanks.value = doc.nranks;
    pickSize.value = doc.bytes;
    stepText.textContent = `step ${k + 1} of ${steps.length}, at ${usText(step.t_us)} on the model's clock`;
    words.replaceChildren(el("p", {}, `${doc.title}: ${doc.summary}.`),
        el("p", {class: "tx-note"}, `Rank r's data is letter r (rank 0 is a); chunk i of it is ai. ` +
           `Predicted for ${bytesText(doc.bytes)}: ${usText(doc.predicted_us)}` +
           (doc.textbook_us >= 0 ? `; textbook ${doc.textbook} = ${usText(doc.textbook_us)}.` : ".")));
    fold.textContent = doc.fold ? doc.fold.replace(/\n/g, " ") : "";
    picture.replaceChildren();
    placed.length = 0;
    const defs = svgEl("defs");
    const head = svgEl("marker", {id: id + "-head", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                                  markerHeight: 7, orient: "auto-start-reverse"});
    head.appendChild(svgEl("path", {d: "M0,0 L10,5 L0,10 z", class: "tx-head"}));
    defs.appendChild(head);
    picture.appendChild(defs);
    const g = svgEl("g");
    picture.appendChild(g);
    picture.setAttribute("data-shape", doc.shape.kind);
    if (doc.shape.kind === "butterfly") drawButterfly(g, doc, step, k);
    else if (doc.shape.kind === "tree") drawTrees(g, doc, step);
    else drawCircle(g, doc, step);
    // The picture's frame is what was drawn, labels and all, and a margin.
    const box = g.getBBox(), m = 12;
    picture.setAttribute("viewBox", `${box.x - m} ${box.y - m} ${box.width + 2 * m} ${box.height + 2 * m}`);
    picture.setAttribute("width", box.width + 2 * m);
    picture.setAttribute("height", box.height + 2 * m);
    said.replaceChildren(...arrows(step).map((a) => el("li", {}, `rank ${a.from} \u2192 rank ${a.to}: ${a.full}`)));
    if (!step.messages.length) said.replaceChildren(el("li", {}, "none: only local work"));
    work.replaceChildren(...step.ranks.map((r) => el("p", {}, `rank ${r.rank} (its round ${r.round}): ` +
                                                          r.labels.join("; ") + `; done at ${usText(r.done_us)}`)));
    drawGrid(doc, step);
  }

  if (!document.getElementById("tx-style")) {
    const css = el("style", {id: "tx-style"});
    css.textContent = `.tx { outline: none; } .tx-bar { margin: 8px 0; } .tx-bar button { margin-left: 4px; }
.tx-step { font-weight: bold; } .tx-note { color: #555; font-size: 13px; } .tx-picture { display: block; }
.tx-picture text { font-family: sans-serif; } .tx-label { font-size: 11px; fill: #8e1b10; }
.tx-labelback { fill: #fff; opacity: 0.85; } .tx-title { font-size: 13px; font-weight: bold; }
.tx-level { font-size: 11px; fill: #555; } .tx-rank { font-size: 11px; font-weight: bold; }
.tx-node circle { fill: #fff; stroke: #333; stroke-width: 1.5; } .tx-dim circle { stroke: #bbb; }
.tx-host1 circle { fill: #eef4ff; } .tx-host2 circle { fill: #fff4e6; } .tx-host3 circle { fill: #eefbee; }
.tx-tree1 circle { fill: #f3f0ff; } .tx-edge { stroke: #ccc; stroke-width: 1.5; }
.tx-arrow { fill: none; stroke: #c0392b; stroke-width: 2; } .tx-head { fill: #c0392b; }
.tx-past { stroke: #888; stroke-width: 1.2; } .tx-future { stroke: #ddd; stroke-dasharray: 3 3; }
.tx-messages, .tx-work { font-size: 13px; } .tx-cells td, .tx-cells th { font-size: 12px; padding: 2px 6px; }`;
    document.head.appendChild(css);
  }
  draw();
  return {draw: draw, state: state};
}
