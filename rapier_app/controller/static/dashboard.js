/* RAPIER live dashboard (docs/operations.md, "Dashboard").
 *
 * Reads, once a second, the controller's read-only routes and draws them; it
 * changes nothing (GET only):
 *   GET /rapier/v1/topology            the fabric in force (every 10 s)
 *   GET /rapier/v1/schedule            paths and rates in force -> scheduled rate per link
 *   GET /rapier/v1/coflows?state=active&flows=1  live coflows: progress, decision, per-flow
 *                                      bytes_sent -> measured rate per flow and link
 *   GET /rapier/v1/summary             counts by state and the CCTs of done coflows
 * Units from the API: bytes, bit/s, seconds (controller clock: summary.now_s).
 * Plain ES2017 and SVG, no library.
 */
"use strict";
(function () {
  const API = "/rapier/v1";
  const SVGNS = "http://www.w3.org/2000/svg";
  const POLL_MS = 1000;        // one reading a second
  const TOPO_MS = 10000;       // the topology rarely changes
  const RATE_WINDOW_S = 3.0;   // measured rate: bytes over the last ~3 s
  const MAX_ROWS = 200;        // live coflows listed (the count says how many exist)
  const VIEW_W = 1000, VIEW_H = 460;

  const state = {
    topo: null, topoKey: "", topoAt: 0,
    links: new Map(),          // "u|v" (sorted ends) -> {line, u, v, cap: {dir: bps}}
    history: new Map(),        // flow_id -> [[t_s, bytes_sent], ...]
    rows: new Map(),           // coflow id -> <tr>
  };

  function $(id) { return document.getElementById(id); }

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function natural(a, b) { return String(a).localeCompare(String(b), undefined, { numeric: true }); }

  function fmtRate(bps) {
    if (bps == null || !isFinite(bps)) return "-";
    if (bps >= 1e9) return (bps / 1e9).toFixed(2) + " Gbit/s";
    if (bps >= 1e6) return (bps / 1e6).toFixed(2) + " Mbit/s";
    if (bps >= 1e3) return (bps / 1e3).toFixed(1) + " kbit/s";
    return bps.toFixed(0) + " bit/s";
  }

  function fmtBytes(b) {
    if (b >= 1 << 30) return (b / (1 << 30)).toFixed(2) + " GiB";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(1) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }

  function fmtS(s) {
    if (s == null || !isFinite(s)) return "-";
    return s < 10 ? s.toFixed(2) + " s" : s.toFixed(1) + " s";
  }

  async function getJSON(path) {
    const r = await fetch(API + path, { cache: "no-store", credentials: "same-origin" });
    if (!r.ok) throw new Error("GET " + path + ": HTTP " + r.status);
    return r.json();
  }

  // -- fabric ------------------------------------------------------------------------
  /* Layers: hosts at the bottom (0), each switch at its hop distance from the
   * nearest host (leaf 1, spine 2; fat-tree edge 1, aggregation 2, core 3). */
  function layout(topo) {
    const adj = new Map();
    for (const n of topo.nodes) adj.set(n.name, []);
    for (const l of topo.links) {
      if (adj.has(l.src)) adj.get(l.src).push(l.dst);
    }
    const layer = new Map();
    let frontier = topo.nodes.filter(n => n.role === "host").map(n => n.name);
    frontier.forEach(h => layer.set(h, 0));
    let d = 0;
    while (frontier.length) {
      d += 1;
      const next = [];
      for (const u of frontier) for (const v of adj.get(u) || []) {
        if (!layer.has(v)) { layer.set(v, d); next.push(v); }
      }
      frontier = next;
    }
    let top = Math.max(1, ...layer.values());
    for (const n of topo.nodes) if (!layer.has(n.name)) layer.set(n.name, top + 1);
    top = Math.max(...layer.values());
    const byLayer = new Map();
    for (const n of topo.nodes) {
      const k = layer.get(n.name);
      if (!byLayer.has(k)) byLayer.set(k, []);
      byLayer.get(k).push(n.name);
    }
    for (const [k, names] of byLayer) if (k > 0) names.sort(natural);
    // hosts under their switch
    const l1 = new Map((byLayer.get(1) || []).map((s, i) => [s, i]));
    const under = h => Math.min(...(adj.get(h) || []).map(s => l1.has(s) ? l1.get(s) : 1e9), 1e9);
    if (byLayer.has(0)) byLayer.get(0).sort((a, b) => (under(a) - under(b)) || natural(a, b));
    const pos = new Map();
    const padY = 28, usable = VIEW_H - 2 * padY;
    for (const [k, names] of byLayer) {
      const y = padY + usable * (1 - k / Math.max(1, top));
      names.forEach((name, i) => pos.set(name, [VIEW_W * (i + 0.5) / names.length, y]));
    }
    return pos;
  }

  function drawFabric(topo) {
    const root = $("fabric");
    root.setAttribute("viewBox", "0 0 " + VIEW_W + " " + VIEW_H);
    while (root.firstChild) root.removeChild(root.firstChild);
    state.links.clear();
    const pos = layout(topo);
    const gl = svg("g", { class: "links" }, root);
    const gn = svg("g", { class: "nodes" }, root);
    for (const l of topo.links) {
      const [a, b] = [l.src, l.dst].sort(natural);
      const key = a + "|" + b;
      let e = state.links.get(key);
      if (!e) {
        const [x1, y1] = pos.get(a), [x2, y2] = pos.get(b);
        const line = svg("line", { class: "link u0", x1, y1, x2, y2, "data-link": a + "-" + b }, gl);
        svg("title", {}, line);
        e = { line, a, b, cap: {} };
        line.addEventListener("mouseenter", () => { $("link-info").textContent = line.__info || ""; });
        state.links.set(key, e);
      }
      e.cap[l.src + ">" + l.dst] = l.capacity_bps;
    }
    const hosts = topo.nodes.filter(n => n.role === "host").length;
    for (const n of topo.nodes) {
      const [x, y] = pos.get(n.name);
      if (n.role === "host") {
        const g = svg("g", { class: "node host", "data-host": n.name }, gn);
        svg("circle", { cx: x, cy: y, r: hosts > 48 ? 3 : 6 }, g);
        if (hosts <= 48) svg("text", { x, y: y + 14 }, g).textContent = n.name;
        svg("title", {}, g).textContent = n.name + " " + (n.ip || "");
      } else {
        const g = svg("g", { class: "node switch", "data-switch": n.name }, gn);
        const w = Math.max(22, 7 * n.name.length + 6);
        svg("rect", { x: x - w / 2, y: y - 9, width: w, height: 18, rx: 3 }, g);
        svg("text", { x, y }, g).textContent = n.name;
        svg("title", {}, g).textContent = n.name + (n.dpid != null ? " dpid " + n.dpid : "") +
          " (" + n.role + ")";
      }
    }
    $("fabric-name").textContent = topo.name + ": " + (topo.nodes.length - hosts) +
      " switches, " + hosts + " hosts";
  }

  function addPath(rates, path, bps) {
    if (!path || !(bps > 0)) return;
    for (let i = 0; i + 1 < path.length; i++) {
      const k = path[i] + ">" + path[i + 1];
      rates.set(k, (rates.get(k) || 0) + bps);
    }
  }

  function colourLinks(sched, measured, background, down) {
    for (const e of state.links.values()) {
      let util = 0;
      const lines = [];
      let isDown = false;
      for (const [u, v] of [[e.a, e.b], [e.b, e.a]]) {
        const k = u + ">" + v;
        const cap = e.cap[k];
        if (cap == null) continue;
        const s = sched.get(k) || 0, m = (measured.get(k) || 0) + (background.get(k) || 0);
        util = Math.max(util, Math.max(s, m) / cap);
        if (down.has(u + "-" + v)) isDown = true;
        lines.push(u + " -> " + v + ": scheduled " + fmtRate(s) + ", measured " + fmtRate(m) +
          (background.has(k) ? " (background " + fmtRate(background.get(k)) + ")" : "") +
          " of " + fmtRate(cap) + (down.has(u + "-" + v) ? " DOWN" : ""));
      }
      const cls = isDown ? "down" : util <= 0.001 ? "u0" : util < 0.25 ? "u1" : util < 0.5 ? "u2"
        : util < 0.75 ? "u3" : util < 0.95 ? "u4" : "u5";
      e.line.setAttribute("class", "link " + cls);
      e.line.setAttribute("data-util", util.toFixed(3));
      e.line.__info = lines.join("\n");
      e.line.firstChild.textContent = e.line.__info;
    }
  }

  // -- coflows -----------------------------------------------------------------------
  function measure(coflows, now) {
    const rates = new Map();    // flow_id -> bit/s
    const seen = new Set();
    for (const c of coflows) for (const f of c.flows || []) {
      seen.add(f.flow_id);
      if (f.state === "done") continue;
      let h = state.history.get(f.flow_id);
      if (!h) { h = []; state.history.set(f.flow_id, h); }
      if (!h.length || h[h.length - 1][0] < now) h.push([now, f.bytes_sent || 0]);
      while (h.length > 2 && now - h[1][0] >= RATE_WINDOW_S) h.shift();
      if (h.length >= 2) {
        const [t0, b0] = h[0], [t1, b1] = h[h.length - 1];
        if (t1 > t0) rates.set(f.flow_id, Math.max(0, (b1 - b0) * 8 / (t1 - t0)));
      }
    }
    for (const k of [...state.history.keys()]) if (!seen.has(k)) state.history.delete(k);
    return rates;
  }

  /* A flow's size: known, else the estimate the scheduler uses (unknown sizes). */
  function sizeOf(f) { return f.size_bytes != null ? f.size_bytes : (f.estimate_bytes || 0); }

  function expected(c) {
    let worst = 0;
    for (const f of c.flows || []) {
      if (f.state === "done") continue;
      const left = Math.max(0, sizeOf(f) - (f.bytes_sent || 0));
      if (left === 0) continue;
      if (!(f.rate_bps > 0)) return null;   // waiting: no rate yet
      worst = Math.max(worst, left * 8 / f.rate_bps);
    }
    return worst;
  }

  function cell(tr, i) {
    while (tr.children.length <= i) tr.appendChild(document.createElement("td"));
    return tr.children[i];
  }

  function drawCoflows(page) {
    const body = $("coflows").tBodies[0];
    const live = new Set();
    for (const c of page.coflows.slice(0, MAX_ROWS)) {
      live.add(c.id);
      let tr = state.rows.get(c.id);
      if (!tr) {
        tr = document.createElement("tr");
        tr.setAttribute("data-coflow", c.id);
        cell(tr, 6);
        const bar = document.createElement("div");
        bar.className = "bar";
        const fill = document.createElement("div");
        fill.className = "fill";
        bar.appendChild(fill);
        tr.children[3].appendChild(bar);
        state.rows.set(c.id, tr);
      }
      body.appendChild(tr);   // keeps arrival order
      const flows = c.flows || [];
      const total = c.total_bytes > 0 ? c.total_bytes : flows.reduce((a, f) => a + sizeOf(f), 0);
      const frac = total > 0 ? Math.min(1, (c.bytes_sent || 0) / total) : 0;
      const done = flows.filter(f => f.state === "done").length;
      const eta = expected(c);
      tr.children[0].textContent = c.id;
      tr.children[1].textContent = c.state;
      const decision = c.decision + (c.fallback ? " (" + c.fallback + ")" : "") +
        (c.rates === "pending" ? ", rates pending" : "");
      tr.children[2].textContent = decision;
      tr.children[2].className = "decision-" + c.decision;
      const fill = tr.children[3].firstChild.firstChild;
      fill.style.width = (100 * frac).toFixed(1) + "%";
      tr.setAttribute("data-progress", frac.toFixed(4));
      tr.children[3].title = (100 * frac).toFixed(1) + " %";
      const guess = flows.some(f => f.size_bytes == null) ? " (estimated)" : "";
      tr.children[4].textContent = fmtBytes(c.bytes_sent || 0) + " / " + fmtBytes(total) + guess;
      tr.children[5].textContent = done + " / " + flows.length;
      tr.children[6].textContent = eta == null ? "waiting (rate 0)" : "in " + fmtS(eta);
    }
    for (const [id, tr] of state.rows) {
      if (!live.has(id)) { tr.remove(); state.rows.delete(id); }
    }
    $("coflow-count").textContent = page.total > MAX_ROWS
      ? "(" + MAX_ROWS + " of " + page.total + " shown)" : "(" + page.total + ")";
  }

  // -- CCT CDF -----------------------------------------------------------------------
  function niceTicks(max, n) {
    const raw = max / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw);
    const out = [0];
    while (out[out.length - 1] < max - 1e-12) out.push(out.length * step);
    return out;
  }

  function drawCdf(ccts) {
    const root = $("cdf");
    const W = 600, H = 220, L = 44, R = 12, T = 10, B = 30;
    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    while (root.firstChild) root.removeChild(root.firstChild);
    const n = ccts.length;
    if (!n) {
      svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, root)
        .textContent = "no completed coflow yet";
      $("cdf-count").textContent = "";
      return;
    }
    const xmax = niceTicks(ccts[n - 1] > 0 ? ccts[n - 1] : 1, 5);
    const top = xmax[xmax.length - 1];
    const X = v => L + (W - L - R) * v / top, Y = p => T + (H - T - B) * (1 - p);
    const ax = svg("g", { class: "axis" }, root);
    for (const v of xmax) {
      svg("line", { x1: X(v), x2: X(v), y1: Y(0), y2: Y(1), class: "grid" }, ax);
      svg("text", { x: X(v), y: H - B + 14, "text-anchor": "middle" }, ax).textContent = +v.toPrecision(3);
    }
    for (const p of [0, 0.25, 0.5, 0.75, 1]) {
      svg("line", { x1: X(0), x2: X(top), y1: Y(p), y2: Y(p), class: "grid" }, ax);
      svg("text", { x: L - 4, y: Y(p) + 3, "text-anchor": "end" }, ax).textContent = p.toFixed(2);
    }
    svg("text", { x: (L + W - R) / 2, y: H - 2, "text-anchor": "middle" }, ax).textContent = "CCT (s)";
    let d = "M" + X(0) + "," + Y(0);
    ccts.forEach((v, i) => { d += " H" + X(v) + " V" + Y((i + 1) / n); });
    svg("path", { d, class: "cdf-line", "data-points": n }, root);
    const q = p => ccts[Math.min(n - 1, Math.floor(p * n))];
    $("cdf-count").textContent = "(" + n + " coflows; median " + fmtS(q(0.5)) + ", p95 " +
      fmtS(q(0.95)) + ", mean " + fmtS(ccts.reduce((a, b) => a + b, 0) / n) + ")";
  }

  // -- polling -----------------------------------------------------------------------
  async function poll() {
    const t0 = performance.now();
    try {
      if (!state.topo || Date.now() - state.topoAt > TOPO_MS) {
        const topo = await getJSON("/topology");
        const key = JSON.stringify([topo.name, topo.nodes.map(n => n.name), topo.links.length]);
        if (key !== state.topoKey) { drawFabric(topo); state.topoKey = key; }
        state.topo = topo;
        state.topoAt = Date.now();
      }
      const [summary, sched, page] = await Promise.all([
        getJSON("/summary"), getJSON("/schedule"),
        getJSON("/coflows?state=active&flows=1&limit=" + MAX_ROWS)]);
      const now = summary.now_s != null ? summary.now_s : Date.now() / 1000;
      const rates = measure(page.coflows, now);
      const schedRates = new Map(), measRates = new Map(), background = new Map();
      for (const a of Object.values(sched.allocations || {})) addPath(schedRates, a.path, a.rate_bps);
      for (const c of page.coflows) for (const f of c.flows || []) addPath(measRates, f.path, rates.get(f.flow_id));
      const broker = sched.broker || {};
      for (const l of broker.links || []) {
        if (typeof l.link === "string" && l.sample_bps != null) {
          const i = l.link.indexOf("-");
          background.set(l.link.slice(0, i) + ">" + l.link.slice(i + 1), l.sample_bps);
        }
      }
      const down = new Set((state.topo.observed || {}).links_down || []);
      colourLinks(schedRates, measRates, background, down);
      const connected = new Set((state.topo.observed || {}).connected || []);
      if (connected.size) {
        document.querySelectorAll("#fabric [data-switch]").forEach(g => {
          g.classList.toggle("missing", !connected.has(g.getAttribute("data-switch")));
        });
      }
      drawCoflows(page);
      drawCdf(summary.ccts_s || []);
      const c = summary.counts || {};
      $("status").className = "status";
      $("status").textContent = "scheduler " + summary.scheduler + " | " + (c.active || 0) +
        " active, " + (c.done || 0) + " done, " + (c.cancelled || 0) + " cancelled | " +
        "controller t = " + fmtS(now) + " | read in " + (performance.now() - t0).toFixed(0) + " ms";
      document.body.setAttribute("data-updated", String(now));
    } catch (err) {
      $("status").className = "status error";
      $("status").textContent = "cannot read the controller: " + err.message;
    }
    setTimeout(poll, POLL_MS);
  }

  poll();
})();
