// SPDX-License-Identifier: MIT
// Run inside tutti-explain --html's page by tests/tools/test-explain-page.sh: it
// drives the page through its own controls (the pickers, forward, back) and
// checks every picture it draws: no text covers other text or a rank, every
// arrow has a label, and each algorithm has its shape: the ring's ranks on
// a circle in order with messages between neighbours, a tree's ranks by
// level (one root, each edge one level down, every level labelled), the
// butterfly's ranks in rows with rank r meeting r xor 2^k. The verdicts go
// into <pre id=check>, which the test reads from the dumped DOM.
"use strict";
(function () {
  const out = [], bad = [];
  const $ = (what) => document.getElementById("explain-" + what);
  const pick = (what, value) => {
    const s = $(what);
    if (![...s.options].some((o) => o.value === String(value))) return false;
    s.value = value;
    s.dispatchEvent(new Event("change"));
    return true;
  };
  const box = (e) => e.getBoundingClientRect();
  const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 &&
                          b.top < a.bottom - 0.5;
  const fail = (where, what) => { if (bad.length < 40) bad.push(where + ": " + what); };

  function checkPicture(where) {
    const svg = $("picture"), texts = [...svg.querySelectorAll("text")], circles = [...svg.querySelectorAll("circle")];
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (meets(box(texts[i]), box(texts[j])))
          fail(where, `"${texts[i].textContent}" overlaps "${texts[j].textContent}"`);
    for (const t of svg.querySelectorAll(".tx-label"))
      for (const c of circles)
        if (meets(box(t), box(c))) fail(where, `label "${t.textContent}" covers a rank`);
    const arrows = svg.querySelectorAll(".tx-arrow").length, labels = svg.querySelectorAll(".tx-label").length;
    if (arrows !== labels) fail(where, `${arrows} arrows but ${labels} labels`);
    if ($("messages").children.length !== Math.max(1, arrows)) fail(where, "the list of messages does not match");
    const view = box(svg);
    for (const t of texts)
      if (box(t).left < view.left - 0.5 || box(t).right > view.right + 0.5) fail(where, `"${t.textContent}" is cut off`);
    return arrows;
  }

  // The ranks' centres in the picture, by rank (and tree or column).
  const centres = (sel) => [...$("picture").querySelectorAll(sel || ".tx-node")].map((g) => {
    const c = g.querySelector("circle");
    return {rank: Number(g.dataset.rank), tree: g.dataset.tree, x: Number(c.getAttribute("cx")),
            y: Number(c.getAttribute("cy"))};
  });

  function checkRing(where, p) {
    const n = centres(), cx = n.reduce((s, a) => s + a.x, 0) / p, cy = n.reduce((s, a) => s + a.y, 0) / p;
    const radius = n.map((a) => Math.hypot(a.x - cx, a.y - cy));
    if (Math.max(...radius) - Math.min(...radius) > 1) fail(where, "the ranks are not on a circle");
    const angle = (a) => (Math.atan2(a.y - cy, a.x - cx) + 2.5 * Math.PI) % (2 * Math.PI);
    for (let r = 1; r < p; r++) if (!(angle(n[r]) > angle(n[r - 1]))) fail(where, "the ranks are not in order round it");
    for (const a of $("picture").querySelectorAll(".tx-arrow")) {
      const d = (Number(a.dataset.to) - Number(a.dataset.from) + p) % p;
      if (d !== 1 && d !== p - 1) fail(where, `a message from ${a.dataset.from} to ${a.dataset.to}, not a neighbour`);
    }
  }

  function checkTrees(where, p, minLevels) {
    const svg = $("picture"), nodes = centres(), trees = new Set(nodes.map((a) => a.tree));
    for (const k of trees) {
      const mine = nodes.filter((a) => a.tree === k), at = new Map(mine.map((a) => [a.rank, a]));
      const levels = [...new Set(mine.map((a) => a.y))].sort((a, b) => a - b);
      if (mine.length !== p) fail(where, `tree ${k} draws ${mine.length} of ${p} ranks`);
      if (levels.length < minLevels) fail(where, `tree ${k} has ${levels.length} levels, not at least ${minLevels}`);
      if (mine.filter((a) => a.y === levels[0]).length !== 1) fail(where, `tree ${k} has no single root on top`);
      for (const e of svg.querySelectorAll(`.tx-edge[data-tree="${k}"]`)) {
        const child = at.get(Number(e.dataset.from)), parent = at.get(Number(e.dataset.to));
        if (levels.indexOf(child.y) !== levels.indexOf(parent.y) + 1)
          fail(where, `tree ${k}: the edge ${child.rank}-${parent.rank} does not go one level down`);
      }
      const named = [...svg.querySelectorAll(".tx-level")].map((t) => t.textContent);
      if (!named.includes("root") || !named.includes("level " + (levels.length - 1)))
        fail(where, `tree ${k}'s levels are not labelled`);
    }
  }

  function checkButterfly(where, p) {
    const rows = new Map();
    for (const a of centres()) {
      if (rows.has(a.rank) && rows.get(a.rank) !== a.y) fail(where, `rank ${a.rank} is not on one row`);
      rows.set(a.rank, a.y);
    }
    let q = 1;
    while (q * 2 <= p) q *= 2;
    for (const a of $("picture").querySelectorAll(".tx-arrow")) {
      const u = Number(a.dataset.from), v = Number(a.dataset.to), x = u ^ v;
      if (!((u < q && v < q && (x & (x - 1)) === 0) || Math.abs(u - v) === q))
        fail(where, `a message from ${u} to ${v} pairs no r and r xor 2^k`);
    }
  }

  const shapes = {ring: "circle", recursive_doubling: "butterfly", rabenseifner: "butterfly", double_tree: "tree"};
  let pictures = 0, arrows = 0;
  for (const algo of [...$("algo").options].map((o) => o.value)) {
    for (const p of [3, 8, 16]) {
      if (!pick("algo", algo) || !pick("ranks", p) || !pick("size", 1 << 20)) {
        fail(algo, `no ${p}-rank 1 MiB schedule on the page`);
        continue;
      }
      const shape = $("picture").dataset.shape, steps = Number($("step").textContent.match(/of (\d+)/)[1]);
      if (shapes[algo] && shape !== shapes[algo]) fail(algo, `drawn as a ${shape}, not a ${shapes[algo]}`);
      for (let k = 0; k < steps; k++) {
        const where = `${algo} on ${p} ranks, step ${k + 1}`;
        if (!$("step").textContent.startsWith(`step ${k + 1} of`)) fail(where, "forward did not get here");
        arrows += checkPicture(where);
        pictures++;
        if (algo === "ring") checkRing(where, p);
        if (shape === "tree") checkTrees(where, p, p >= 8 ? 4 : 2);
        if (shape === "butterfly") checkButterfly(where, p);
        $("forward").click();
      }
      if (!$("step").textContent.startsWith("step 1 of")) fail(algo, "forward from the last step does not wrap");
      $("back").click();
      if (!$("step").textContent.startsWith(`step ${steps} of`)) fail(algo, "back from the first step does not wrap");
    }
  }
  out.push(`${pictures} pictures, ${arrows} arrows checked`);
  out.push(bad.length ? "FAIL\n" + bad.join("\n") : "PASS");
  const pre = document.createElement("pre");
  pre.id = "check";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
})();
