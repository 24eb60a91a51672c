// multios report: draws the tables and SVG charts from the JSON embedded in the page. No network.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const main = document.getElementById("main");
  const tip = document.getElementById("tip");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k);
    return e;
  }
  function sv(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  function secs(s) {
    if (s === null || s === undefined || Number.isNaN(s)) return "-";
    const a = Math.abs(s);
    if (a === 0) return "0 s";
    if (a < 1e-6) return (s * 1e9).toFixed(1) + " ns";
    if (a < 1e-3) return (s * 1e6).toFixed(3) + " µs";
    if (a < 1) return (s * 1e3).toFixed(3) + " ms";
    return s.toFixed(3) + " s";
  }
  function num(v, d) {
    return typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : String(v);
  }
  function td(text, v, cls) {
    const c = el("td", cls ? { class: cls } : {}, text);
    if (v !== undefined && v !== null) c.dataset.v = String(v);
    return c;
  }
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = ev.clientX + 12 + "px";
    tip.style.top = ev.clientY + 12 + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  function section(s) {
    const sec = el("section", { id: s.id });
    sec.append(el("h2", {}, s.title), el("p", { class: "cmd" }, "produced by: ", el("code", {}, s.produced_by)));
    main.append(sec);
    return sec;
  }

  // A line or scatter chart: series [{name, points: [[x, y, tipText?], …]}].
  function chart(o) {
    const W = o.width || 380, H = o.height || 250, L = 52, R = 12, T = 24, B = 38;
    const pts = o.series.flatMap((s) => s.points);
    const tx = (x) => (o.xLog ? Math.log10(x) : x);
    const xs = pts.map((p) => tx(p[0])).filter(Number.isFinite), ys = pts.map((p) => p[1]).filter(Number.isFinite);
    let [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(0, ...ys), Math.max(...ys)];
    if (o.diagonal) { x0 = y0 = Math.min(x0, y0); x1 = y1 = Math.max(x1, y1); }
    if (x1 === x0) { x1 = x0 + 1; }
    if (y1 === y0) { y1 = y0 + 1; }
    y1 += (y1 - y0) * 0.05;
    const X = (x) => L + ((tx(x) - x0) / (x1 - x0)) * (W - L - R);
    const Y = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
    const svg = sv("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` });
    const title = sv("text", { x: L, y: 15, class: "title" });
    title.textContent = o.title;
    svg.append(title);
    const grid = sv("g", { class: "grid" }), axis = sv("g", { class: "axis" });
    for (let i = 0; i <= 4; i++) {
      const yv = y0 + ((y1 - y0) * i) / 4, yy = Y(yv);
      grid.append(sv("line", { x1: L, x2: W - R, y1: yy, y2: yy }));
      const t = sv("text", { x: L - 4, y: yy + 4, "text-anchor": "end" });
      t.textContent = Math.abs(yv) >= 100 ? yv.toFixed(0) : yv.toPrecision(3);
      axis.append(t);
      if (o.xLog) continue;
      const xv = x0 + ((x1 - x0) * i) / 4, xx = L + ((xv - x0) / (x1 - x0)) * (W - L - R);
      const u = sv("text", { x: xx, y: H - B + 14, "text-anchor": "middle" });
      u.textContent = Math.abs(xv) >= 100 ? xv.toFixed(0) : xv.toPrecision(3);
      axis.append(u);
    }
    // a log axis: one tick per power of ten
    if (o.xLog) for (let e = Math.ceil(x0); e <= Math.floor(x1); e++) {
      const xx = L + ((e - x0) / (x1 - x0)) * (W - L - R);
      const u = sv("text", { x: xx, y: H - B + 14, "text-anchor": "middle" });
      u.textContent = e >= 0 && e <= 6 ? String(10 ** e) : "1e" + e;
      axis.append(u);
    }
    axis.append(sv("line", { x1: L, x2: W - R, y1: H - B, y2: H - B }), sv("line", { x1: L, x2: L, y1: T, y2: H - B }));
    const xl = sv("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" });
    xl.textContent = o.xLabel;
    const yl = sv("text", { x: 12, y: (T + H - B) / 2, transform: `rotate(-90 12 ${(T + H - B) / 2})`, "text-anchor": "middle" });
    yl.textContent = o.yLabel;
    axis.append(xl, yl);
    svg.append(grid, axis);
    if (o.diagonal) svg.append(sv("line", { x1: X(x0 > 0 || !o.xLog ? x0 : 1), y1: Y(y0), x2: X(x1), y2: Y(y1), stroke: "#aab", "stroke-dasharray": "4 3" }));
    o.series.forEach((s, i) => {
      const color = COLORS[i % COLORS.length];
      const ok = s.points.filter((p) => Number.isFinite(tx(p[0])) && Number.isFinite(p[1]));
      if (!o.scatter && ok.length > 1) {
        svg.append(sv("polyline", { points: ok.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "), fill: "none", stroke: color, "stroke-width": 1.8, ...(o.step ? {} : {}) }));
      }
      for (const p of ok) {
        const c = sv("circle", { cx: X(p[0]), cy: Y(p[1]), r: o.scatter ? 4.5 : 3, fill: color, class: "pt" });
        const text = p[2] || `${s.name}\n${o.xLabel} = ${p[0]}\n${o.yLabel} = ${p[1]}`;
        c.addEventListener("mousemove", (ev) => showTip(ev, text));
        c.addEventListener("mouseleave", hideTip);
        svg.append(c);
      }
    });
    const box = el("div", { class: "chart" }, svg);
    if (o.series.length > 1 || o.legend) {
      const lg = el("div", { class: "legend" });
      o.series.forEach((s, i) => {
        const sw = el("i", {});
        sw.style.background = COLORS[i % COLORS.length];
        lg.append(el("span", {}, sw, s.name));
      });
      box.append(lg);
    }
    return box;
  }

  // --- header
  document.title = D.title;
  main.append(
    el("h1", {}, D.title),
    el("p", { class: "cmd" }, "this page: ", el("code", {}, D.command), ` (multios ${D.multios_version}; data embedded, works offline)`)
  );
  const S = Object.fromEntries(D.sections.map((s) => [s.id, s]));
  const P = D.profile;

  // --- profile
  {
    const sec = section(S.profile);
    sec.append(el("p", { class: "meta" },
      el("span", {}, "command: ", el("code", {}, P.command.join(" "))),
      el("span", {}, `tool: ${P.tool} (accuracy ${P.accuracy}${P.partial ? ", PARTIAL" : ""})`),
      el("span", { id: "p-value", "data-v": String(P.p) }, `p = ${(P.p * 100).toFixed(4)} %`),
      el("span", {}, `wall ${secs(P.wall_s)}, C ${secs(P.compute_s)}, Σg ${secs(P.syscall_s)}, ${P.calls} calls, ${P.threads} threads`)));
    const t = el("table", { id: "profile-table" });
    t.append(el("tr", {}, ...["syscall", "n(s)", "g(s)", "mean", "min", "max", "errors", "% wall"].map((h, i) => el("th", i ? {} : { class: "l" }, h))));
    for (const r of P.rows) {
      t.append(el("tr", { "data-syscall": r.name },
        td(r.name, undefined, "l"), td(String(r.count), r.count), td(secs(r.total_s), r.total_s), td(secs(r.mean_s), r.mean_s),
        td(secs(r.min_s), r.min_s), td(secs(r.max_s), r.max_s), td(String(r.errors), r.errors), td(r.pct_wall.toFixed(3), r.pct_wall)));
    }
    sec.append(el("div", { class: "scroll" }, t));
    for (const n of P.notes) sec.append(el("p", { class: "cmd" }, "note: " + n));
  }

  // --- CDF
  {
    const sec = section(S.cdf);
    const pts = D.cdf.points.map(([n, f]) => [n, f, `≤ ${n} calls: ${(f * 100).toFixed(1)} % of the distinct system calls`]);
    sec.append(el("div", { class: "charts" }, chart({ title: "Distinct system calls invoked at most n times", xLabel: "n(s) (log10)", yLabel: "fraction", xLog: true, series: [{ name: "CDF", points: pts }], width: 520 })));
  }

  // --- projections
  {
    const sec = section(S.projections);
    const charts = el("div", { class: "charts" });
    for (const pol of D.policies) {
      const series = D.fcs.map((fc) => ({
        name: "f_c = " + fc,
        points: D.projections.filter((c) => c.policy === pol && c.fc === fc)
          .map((c) => [c.gamma, c.speedup, `policy ${pol}, γ = ${c.gamma}, f_c = ${fc}\nS_r = ${c.speedup.toFixed(6)} (naïve ${c.naive.toFixed(6)})\n${c.delegated_calls} delegated calls\n${c.command}`]),
      }));
      charts.append(chart({ title: `S_r vs γ — policy ${pol}`, xLabel: "γ", yLabel: "S_r", series }));
    }
    sec.append(charts);
    const t = el("table", { id: "projection-table" });
    t.append(el("tr", {}, el("th", { class: "l" }, "policy"), el("th", { class: "l" }, "f_c"), ...D.gammas.map((g) => el("th", {}, "S_r (γ=" + g + ")"))));
    for (const pol of D.policies) {
      for (const fc of D.fcs) {
        const tr = el("tr", {}, td(pol, undefined, "l"), td(fc, undefined, "l"));
        for (const g of D.gammas) {
          const c = D.projections.find((x) => x.policy === pol && x.fc === fc && x.gamma === g);
          const cell = td(c.speedup.toFixed(4), c.speedup);
          Object.assign(cell.dataset, { policy: pol, fc: fc, gamma: String(g) });
          cell.title = c.command;
          tr.append(cell);
        }
        t.append(tr);
      }
    }
    sec.append(t);
  }

  // --- measured against projected
  if (S.measured) {
    const sec = section(S.measured);
    const pairs = D.measured.filter((m) => m.pairs.length);
    if (pairs.length) {
      sec.append(el("div", { class: "charts" }, chart({
        title: "Measured vs projected speedup (dashed: equal)", xLabel: "measured S", yLabel: "projected S", scatter: true, diagonal: true, legend: true, width: 460, height: 320,
        series: pairs.map((m) => ({ name: `${m.kind} (${m.source})`, points: m.pairs.map((p) => [p.measured, p.projected, `${p.label}\nmeasured ${p.measured.toFixed(4)}\nprojected ${p.projected.toFixed(4)}`]) })),
      })));
    }
    D.measured.forEach((m, i) => {
      sec.append(el("h3", {}, `${m.kind}: ${m.source}`), el("p", { class: "cmd" }, "produced by: ", el("code", {}, m.produced_by)));
      if (m.kind === "noise" && m.rows.length) {
        sec.append(el("div", { class: "charts" }, chart({ title: "noise % per run", xLabel: "run #", yLabel: "noise %", scatter: true, series: [{ name: "noise", points: m.rows.map((r, k) => [k + 1, r[4], `${r[0]} cpu ${r[2]}: ${Number(r[4]).toFixed(4)} %`]) }] })));
      }
      const t = el("table", { class: "measured", "data-index": String(i) });
      t.append(el("tr", {}, ...m.columns.map((c) => el("th", {}, c))));
      for (const r of m.rows) t.append(el("tr", {}, ...r.map((v) => td(typeof v === "number" ? num(v, 6) : String(v ?? "-"), typeof v === "number" ? v : undefined, typeof v === "number" ? "" : "l"))));
      sec.append(el("div", { class: "scroll" }, t));
    });
  }

  // ?section=ID shows that section alone (for per-section screenshots)
  const only = new URLSearchParams(location.search).get("section");
  if (only) for (const s of document.querySelectorAll("section")) if (s.id !== only) s.style.display = "none";
  document.body.dataset.rendered = "ok";
})();
