// amplify-jax explore: the page.  Controls come from /api/catalog; each change asks /api/curve for the
// curves (one broadcast evaluation on the server) and draws them with Plotly where the server ships it, else
// asks /api/render for matplotlib's SVG.  The page's state lives in its query string.
"use strict";

const $ = (id) => document.getElementById(id);
const RANGE = 1000;          // slider positions
const MAX_PINS = 6;
const DEFAULT_BOUND = "shuffle.clones";

let CAT = null;              // the catalog
const BOUNDS = {};           // id -> bound info
let B = null;                // the bound shown
// logy: true / false as chosen (the checkbox or the URL), null: the curve's default (log where its values span
// more than 1.5 decades or the answer is a delta: the answer's view.logy)
const S = { x: "", lo: "", hi: "", points: "", logx: true, logy: null, family: "", fv: "", values: {},
            solveFor: "", target: "" };
let lastCurve = null, lastRequest = null, solved = null;
let pins = [];               // {request, x, traces}
const warm = new Set();      // bounds whose kernel has answered once in this page
let inflight = false, pending = false, timer = null, armed = false;
// What the plot shows, for export and for the browser tests: the request, the traces drawn (label, x, y,
// style), a counter of drawings and whether a change waits to be drawn.
const shown = { request: null, bound: null, x: null, symbol: null, traces: [], drawn: 0, settled: false };
window.explorerShown = shown;

// ------------------------------------------------------------------------------------------------------
// helpers

function fmt(v, digits = 6) {
  if (v === null || v === undefined) return "–";
  if (typeof v !== "number") return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(digits - 1).replace(/\.?0+e/, "e");
  return String(+v.toPrecision(digits));
}

function num(text) {        // a typed number, or the text itself (the server names the parameter)
  const t = String(text).trim();
  if (t === "") return t;
  const v = Number(t);
  return Number.isFinite(v) ? v : t;
}

// This launch's token, from the page's own URL (amplify-jax explore prints it): sent with every API call.
const TOKEN = new URLSearchParams(location.search).get("token") || "";

async function call(path, body) {
  let r;
  const headers = { "X-Amplify-Token": TOKEN };
  try {
    r = await fetch(path, body === undefined ? { headers } : {
      method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  } catch (e) {
    return { error: "the explorer's server does not answer (stopped?)" };
  }
  try { return await r.json(); } catch (e) { return { error: `HTTP ${r.status} from the server` }; }
}

// Tick values of a log axis showing [lo, hi]: every decade inside when at least two are (thinned to at most
// 9), else 1-2-5 (then 1..9) times the powers of ten inside, else evenly spaced round values: always at least
// two labels (the same rule as log_ticks in amplify_jax/plotting.py).
function logTicks(lo, hi) {
  if (!(lo > 0) || !Number.isFinite(hi)) return [1, 10];
  if (hi < lo) [lo, hi] = [hi, lo];
  if (hi <= lo * (1 + 1e-12)) hi = lo * 1.001;
  const inside = (v) => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9);
  const a = Math.floor(Math.log10(lo)) - 1, b = Math.ceil(Math.log10(hi)) + 1;
  const dec = [];
  for (let k = a; k <= b; k++) if (inside(10 ** k)) dec.push(k);
  if (dec.length >= 2) {
    const need = Math.ceil(dec.length / 9);
    let step = 1;
    for (const e of [1, 10, 100, 1000]) { const m = [1, 2, 3, 5].find((m) => m * e >= need); if (m) { step = m * e; break; } }
    let kept = dec.filter((k) => k % step === 0);
    if (kept.length < 2) kept = dec.filter((_, i) => i % step === 0);
    return kept.map((k) => 10 ** k);
  }
  for (const mults of [[1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
    const t = [];
    for (let k = a; k <= b; k++) for (const m of mults) { const v = +(m * 10 ** k).toPrecision(12); if (inside(v)) t.push(v); }
    if (t.length >= 2) return t;
  }
  const raw = (hi - lo) / 4, p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((d) => d >= raw) || 10 * p;
  const t = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi * (1 + 1e-12); v += step) t.push(+v.toPrecision(12));
  return t.length >= 2 ? t : [lo, hi];
}

function tickText(v) {      // 1e-5, 0.02, 300, 1.5e6 (as the renderer's labels)
  const a = Math.abs(v);
  return (a !== 0 && (a < 1e-4 || a >= 1e6) ? v.toExponential().replace(/e\+?/, "e") : String(+v.toPrecision(6)));
}

function logAxis(values, range) {   // Plotly's log axis with labelled ticks at any range (range: log10 of the ends)
  let lo, hi;
  if (range) { lo = 10 ** range[0]; hi = 10 ** range[1]; }
  else {
    const pos = values.filter((v) => typeof v === "number" && v > 0 && Number.isFinite(v));
    if (!pos.length) return { type: "log" };
    lo = Math.min(...pos); hi = Math.max(...pos);
  }
  const t = logTicks(lo, hi);
  return { type: "log", tickmode: "array", tickvals: t, ticktext: t.map(tickText) };
}

// a title as lines of at most `width` characters, at most `lines` of them (the last shortened with "…")
function wrapTitle(text, width = 100, lines = 3) {
  const out = [];
  for (const part of String(text).split("\n")) {
    let line = "";
    for (const w of part.split(/\s+/).filter(Boolean)) {
      if (line && (line + " " + w).length > width) { out.push(line); line = w; }
      else line = line ? line + " " + w : w;
      while (line.length > width) { out.push(line.slice(0, width)); line = line.slice(width); }
    }
    out.push(line);
  }
  if (out.length > lines) { out.length = lines; out[lines - 1] = out[lines - 1].slice(0, width - 1).trimEnd() + "…"; }
  return out;
}

// points whose status is not ok: a marker of their own (the same as STATUS_MARKERS in explore/_render.py)
const STATUS_MARKS = {
  fallback: ["triangle-up-open", "fallback: the theorem's conditions fail, a weaker bound that holds"],
  infeasible: ["square-open", "infeasible: no value in the search range meets the target"],
  at_limit: ["diamond-open", "at_limit: the whole search range meets the target"],
  not_monotone: ["triangle-down-open", "not_monotone: the re-check failed"],
  max_iter: ["cross-open", "max_iter: the search did not reach its tolerance"],
  error: ["x-open", "error: the kernel gave no number"],
  loose: ["circle-open", "loose: sound, but far above its own lower value"],
};

function setStatus(text, busy) { $("status").textContent = text; $("status").className = busy ? "busy" : ""; }
function setMessage(text) { $("message").textContent = text || ""; }
function param(name) { return B.params.find((p) => p.name === name); }
function numeric(p) { return p.kind === "real" || p.kind === "integer"; }

function toPos(p, v) {
  const [a, b] = p.slider;
  let t;
  if (p.log) t = v > 0 ? (Math.log(v) - Math.log(a)) / (Math.log(b) - Math.log(a)) : 0;
  else t = (v - a) / (b - a);
  return Math.round(Math.min(1, Math.max(0, t)) * RANGE);
}

function fromPos(p, pos) {
  const [a, b] = p.slider, t = pos / RANGE;
  let v = p.log ? Math.exp(Math.log(a) + t * (Math.log(b) - Math.log(a))) : a + t * (b - a);
  v = p.integer ? Math.round(v) : +v.toPrecision(4);
  return Math.min(b, Math.max(a, v));
}

// ------------------------------------------------------------------------------------------------------
// building the controls from the catalog

function fillBoundSelect() {
  const sel = $("bound");
  for (const g of CAT.groups) {
    const og = document.createElement("optgroup");
    og.label = `${g.title} — ${g.paper}`;
    for (const b of g.bounds) {
      BOUNDS[b.id] = b;
      const o = document.createElement("option");
      o.value = b.id;
      o.textContent = `${b.id}: ${b.summary}`.slice(0, 140);
      og.appendChild(o);
    }
    sel.appendChild(og);
  }
  const lim = CAT.limits;
  $("limits").textContent = `At most ${lim.max_points} points per request (x values × curves), ` +
    `${lim.max_curves} family values, ${lim.max_orders} Rényi orders, graphs of up to ${lim.max_graph_users} ` +
    `users. Curves drawn by ${CAT.plotting === "plotly" ? "Plotly (from the installed plotly package)" : "matplotlib (SVG)"}.`;
}

function defaults(b) {     // the bound's default view (the catalog's view: x axis and range; y scale from the values)
  S.values = {};
  for (const p of b.params) S.values[p.name] = Array.isArray(p.value) ? p.value.join(",") : String(p.value);
  S.x = (b.view && b.view.x) || b.axes.find((n) => { const p = b.params.find((q) => q.name === n); return p && p.monotone && n !== b.pair; })
    || b.axes[0];
  S.family = ""; S.fv = ""; S.points = "";
  axisDefaults();
  S.logy = null;
  S.solveFor = b.solvable[0] || ""; S.target = "";
}

function logY(c) {          // the y scale drawn: as chosen, else the curve's default
  return S.logy !== null ? S.logy : !!(c && c.view && c.view.logy);
}

function axisDefaults() {
  const p = param(S.x);
  if (p && numeric(p)) { S.lo = fmt(p.x_range[0]); S.hi = fmt(p.x_range[1]); S.logx = p.log; }
  else { S.lo = "2"; S.hi = "256"; S.logx = true; }     // Rényi orders
}

function privacyNote(p) {
  const sym = B.symbol;
  if (p.more_privacy_at) return p.more_privacy_at === "low" ? "← more privacy" : "more privacy →";
  if (p.smaller_answer_at) return p.smaller_answer_at === "low" ? `← smaller ${sym}` : `smaller ${sym} →`;
  return "";
}

function buildParams() {
  const table = $("params");
  table.replaceChildren();
  for (const p of B.params) {
    const tr = document.createElement("tr");
    tr.dataset.name = p.name;
    const role = p.name === S.x ? "x axis" : p.name === S.family ? "family" : "";
    if (role) tr.className = "axis";
    const tdName = document.createElement("td");
    tdName.className = "name"; tdName.textContent = p.name; tdName.title = `${p.doc} (${p.domain})`;
    const tdCtl = document.createElement("td"), tdBox = document.createElement("td");
    tr.append(tdName, tdCtl, tdBox);
    if (numeric(p)) {
      const lo = document.createElement("span"), hi = document.createElement("span");
      lo.className = hi.className = "end";
      lo.textContent = fmt(p.slider[0]); hi.textContent = fmt(p.slider[1]);
      const slider = document.createElement("input");
      slider.type = "range"; slider.min = 0; slider.max = RANGE; slider.step = 1; slider.id = "slider-" + p.name;
      slider.title = `${p.doc}; ${p.log ? "log scale" : "linear"}${p.integer ? ", integers" : ""}`;
      const v = Number(S.values[p.name]);
      slider.value = toPos(p, Number.isFinite(v) ? v : p.value);
      slider.disabled = !!role;
      const wrap = document.createElement("div");
      wrap.className = "slider";
      const note = document.createElement("span");
      note.className = "privacy"; note.textContent = privacyNote(p);
      note.style.textAlign = p.smaller_answer_at === "high" ? "right" : "left";
      const dom = document.createElement("span");
      dom.className = "domain"; dom.textContent = p.domain + (p.log ? " · log slider" : "");
      wrap.append(lo, slider, hi, note, dom);
      tdCtl.append(wrap);
      slider.addEventListener("input", () => {
        const val = fromPos(p, Number(slider.value));
        S.values[p.name] = String(val);
        const box = $("box-" + p.name);
        if (box) { box.value = fmt(val); box.classList.remove("bad"); }
        schedule();
      });
    } else if (p.kind === "choice") {
      const sel = document.createElement("select");
      sel.id = "box-" + p.name;
      for (const c of p.choices) { const o = document.createElement("option"); o.value = o.textContent = c; sel.appendChild(o); }
      sel.value = S.values[p.name];
      sel.addEventListener("change", () => { S.values[p.name] = sel.value; schedule(); });
      tdCtl.append(sel);
      tdCtl.title = p.doc;
    } else {           // graph spec or Rényi orders: typed
      const input = document.createElement("input");
      input.id = "box-" + p.name; input.size = 28; input.value = S.values[p.name];
      if (p.kind === "graph") {
        input.setAttribute("list", "graph-examples");
        let dl = $("graph-examples");
        if (!dl) {
          dl = document.createElement("datalist"); dl.id = "graph-examples";
          for (const e of p.examples) { const o = document.createElement("option"); o.value = e; dl.appendChild(o); }
          document.body.appendChild(dl);
        }
      }
      input.disabled = !!role;
      input.addEventListener("change", () => { S.values[p.name] = input.value.trim(); schedule(); });
      tdCtl.append(input);
      const dom = document.createElement("span");
      dom.className = "domain"; dom.textContent = p.kind === "graph" ? "graph spec, e.g. ring:16, torus:4x4" : p.domain;
      tdCtl.append(dom);
    }
    if (role) {
      tdBox.className = "role"; tdBox.textContent = role;
    } else if (numeric(p)) {
      const box = document.createElement("input");
      box.id = "box-" + p.name; box.size = 10; box.value = fmt(Number(S.values[p.name]));
      box.title = "exact value (Enter)";
      box.addEventListener("change", () => {
        const t = box.value.trim(), v = Number(t);
        if (t === "" || !Number.isFinite(v)) {
          box.classList.add("bad");
          setMessage(`${p.name}: expected a number, got ${JSON.stringify(t)}`);
          return;
        }
        box.classList.remove("bad");
        S.values[p.name] = t;
        $("slider-" + p.name).value = toPos(p, v);
        schedule();
      });
      tdBox.append(box);
    }
    table.appendChild(tr);
  }
}

function buildAxes() {
  const xs = $("x"), fam = $("family");
  xs.replaceChildren(); fam.replaceChildren();
  for (const n of B.axes) { const o = document.createElement("option"); o.value = o.textContent = n; xs.appendChild(o); }
  xs.value = S.x;
  const none = document.createElement("option"); none.value = ""; none.textContent = "(none)"; fam.appendChild(none);
  for (const n of B.axes) if (n !== S.x) { const o = document.createElement("option"); o.value = o.textContent = n; fam.appendChild(o); }
  fam.value = S.family;
  $("lo").value = S.lo; $("hi").value = S.hi; $("points").value = S.points;
  $("points").placeholder = String(CAT.limits.default_points);
  $("logx").checked = S.logx; $("logy").checked = logY(lastCurve && lastCurve.bound === B.id ? lastCurve : null);
  $("family-values").value = S.fv;
  const sf = $("solve-for");
  sf.replaceChildren();
  for (const n of B.solvable) { const o = document.createElement("option"); o.value = o.textContent = n; sf.appendChild(o); }
  sf.value = S.solveFor;
  $("solve-row").style.display = B.solvable.length ? "" : "none";
  $("solve-result").textContent = B.solvable.length ? "" : "Nothing to solve for: this bound declares no monotone parameter " +
    (B.answer === "rdp" ? "(an RDP curve)." : "beyond its (ε, δ) pair.");
  $("solve-target-name").textContent = B.target === "target_delta" ? "target δ" : "target ε";
  $("solve-target").value = S.target;
  updateSolveDirection();
}

function updateSolveDirection() {
  const p = B.solvable.length ? param($("solve-for").value) : null;
  $("solve-direction").textContent = p ? (p.monotone === "decreasing" ? "smallest" : "largest") : "value of";
}

function showBound() {
  $("bound").value = B.id;
  $("bound-title").textContent = `${B.id} — ${B.summary}` + (B.side === "lower" ? " (a lower bound)" : "");
  $("bound-paper").textContent = `${B.paper}; ${B.theorem}`;
  $("bound-notes").textContent = B.notes;
  $("bound-notes-box").style.display = B.notes ? "" : "none";
  buildAxes();
  buildParams();
}

// ------------------------------------------------------------------------------------------------------
// the URL holds the state

function syncURL() {
  const q = new URLSearchParams();
  if (TOKEN) q.set("token", TOKEN);  // a reload keeps working
  q.set("bound", B.id); q.set("x", S.x);
  if (S.lo) q.set("lo", S.lo);
  if (S.hi) q.set("hi", S.hi);
  if (S.points) q.set("points", S.points);
  q.set("logx", S.logx ? "1" : "0");
  if (S.logy !== null) q.set("logy", S.logy ? "1" : "0");
  if (S.family) { q.set("family", S.family); if (S.fv) q.set("fv", S.fv); }
  for (const p of B.params) q.set("p." + p.name, S.values[p.name]);
  if (S.solveFor) q.set("solve_for", S.solveFor);
  if (S.target) q.set("target", S.target);
  for (const pin of pins) q.append("pin", JSON.stringify(pin.request));
  history.replaceState(null, "", "?" + q.toString());
}

function readURL() {
  const q = new URLSearchParams(location.search);
  const id = q.get("bound");
  B = BOUNDS[id] || BOUNDS[DEFAULT_BOUND] || BOUNDS[CAT.groups[0].bounds[0].id];
  defaults(B);
  if (id && !BOUNDS[id]) setMessage(`bound ${JSON.stringify(id)} is not registered; showing ${B.id}`);
  if (B.id !== id) return [];
  if (q.has("x") && B.axes.includes(q.get("x"))) { S.x = q.get("x"); axisDefaults(); }
  for (const k of ["lo", "hi", "points", "fv", "target"]) if (q.has(k)) S[k] = q.get(k);
  if (q.has("family") && B.axes.includes(q.get("family")) && q.get("family") !== S.x) S.family = q.get("family");
  if (q.has("logx")) S.logx = q.get("logx") === "1";
  if (q.has("logy")) S.logy = q.get("logy") === "1";
  if (q.has("solve_for") && B.solvable.includes(q.get("solve_for"))) S.solveFor = q.get("solve_for");
  for (const p of B.params) if (q.has("p." + p.name)) S.values[p.name] = q.get("p." + p.name);
  return q.getAll("pin").slice(0, MAX_PINS);
}

// ------------------------------------------------------------------------------------------------------
// curves

function wire(p, text) {
  return numeric(p) ? num(text) : text;
}

function curveRequest() {
  const params = {};
  for (const p of B.params) if (p.name !== S.x && p.name !== S.family) params[p.name] = wire(p, S.values[p.name]);
  const req = { bound: B.id, x: S.x, params, log: S.logx };
  if (S.lo !== "") req.lo = num(S.lo);
  if (S.hi !== "") req.hi = num(S.hi);
  if (S.points !== "") req.points = num(S.points);
  if (S.family) { req.family = S.family; if (S.fv.trim()) req.family_values = S.fv; }
  return req;
}

function curveTraces(curve, prefix) {
  const out = [];
  for (const s of curve.series) {
    const label = prefix ? (curve.series.length > 1 ? `${prefix}: ${s.label}` : prefix) : s.label;
    out.push({ label, x: curve.x.values, y: s.y, style: "solid", bound: curve.bound, cite: curve.cite, status: s.status });
    for (const [k, v] of Object.entries(s.outputs || {})) {     // a lower value: drawn as a band under its curve
      if (/lower/.test(k) && Array.isArray(v) && typeof v[0] !== "boolean") {
        out.push({ label: `${label} (${k})`, x: curve.x.values, y: v, style: "dashed", bound: curve.bound, lowerOf: label });
      }
    }
  }
  return out;
}

function schedule() {
  shown.settled = false;
  syncURL();
  clearTimeout(timer);
  armed = true;
  timer = setTimeout(() => { armed = false; redraw(); }, 120);
}

async function redraw() {
  if (inflight) { pending = true; return; }
  inflight = true; pending = false;
  const req = curveRequest(), id = B.id;
  const t0 = performance.now();
  // progress: after 300 ms, "computing… N s" (or "compiling…" for a bound's first curve), counted every second
  const progress = () => {
    const sec = ((performance.now() - t0) / 1000).toFixed(0);
    setStatus(warm.has(id) ? `computing… ${sec} s` :
      `compiling the kernel of ${id} (the first curve of a bound compiles it: seconds to a minute)… ${sec} s`, true);
    $("plot").classList.add("computing");
  };
  let ticker = null;
  const slow = setTimeout(() => { progress(); ticker = setInterval(progress, 1000); }, 300);
  const r = await call("/api/curve", req);
  clearTimeout(slow); clearInterval(ticker);
  $("plot").classList.remove("computing");
  shown.error = r.error || null;
  if (r.error) {
    setMessage(r.error);
    setStatus("");
  } else {
    warm.add(id);
    setMessage("");
    lastCurve = r; lastRequest = req;
    await draw();
    setStatus(`${r.points} points: ${r.elapsed_ms.toFixed(1)} ms on the kernel, ${(performance.now() - t0).toFixed(0)} ms ` +
      `to the page (at most ${r.max_points} points per request)`);
    $("notes").textContent = (r.notes || []).join("; ");
  }
  inflight = false;
  if (pending) redraw();
  else if (!armed) shown.settled = true;
}

async function draw() {
  if (!lastCurve) return;
  const c = lastCurve;
  const many = pins.some((p) => p.x === c.x.name);
  let traces = curveTraces(c, many || c.series.length === 1 ? c.bound : "");
  const hidden = [];
  for (const pin of pins) {
    if (pin.x === c.x.name) traces = traces.concat(pin.traces); else hidden.push(pin.traces[0].label);
  }
  $("pins").textContent = pins.length ? `${pins.length} pinned` + (hidden.length ? ` (${hidden.length} on another x axis, hidden)` : "") : "";
  const ylabel = c.symbol + (c.side === "lower" ? " (lower bound)" : "");
  // the title: "bound — paper, theorem" over the theorem in full, wrapped (at most 3 lines; the renderer wraps too)
  const title = `${c.bound} — ${c.cite || ""}\n${c.theorem || ""}`.slice(0, 600);
  const logy = logY(c);
  $("logy").checked = logy;
  const mark = solvedMark(c);
  if (window.Plotly) {
    const data = traces.map((t) => ({ x: t.x, y: t.y, name: (t.label || c.bound) + (t.cite ? ` — ${t.cite}` : ""), mode: "lines",
      line: { dash: t.style === "dashed" ? "dash" : "solid" }, connectgaps: false }));
    for (const [name, [symbol, text]] of Object.entries(STATUS_MARKS)) {   // points not ok: marked
      const mx = [], my = [];
      for (const t of traces) {
        if (!t.status) continue;
        t.status.forEach((st, i) => { if (st === name) { mx.push(t.x[i]); my.push(Number.isFinite(t.y[i]) ? t.y[i] : null); } });
      }
      if (my.every((v) => v === null)) continue;   // none with a finite value to mark (the notes count them)
      data.push({ x: mx, y: my, name: text, mode: "markers", hoverinfo: "x+y+name",
        marker: { symbol, size: 8, color: "#c0392b", line: { width: 1.5 } } });
    }
    const lines = wrapTitle(title);
    const xs = traces.flatMap((t) => t.x), ys = traces.flatMap((t) => t.y);
    const layout = { margin: { l: 70, r: 20, t: 24 + 16 * lines.length, b: 50 },
      title: { text: lines.join("<br>"), font: { size: 12 }, x: 0.01, xanchor: "left", y: 0.98, yanchor: "top" },
      xaxis: { title: { text: c.x.name }, ...(S.logx ? logAxis(xs) : { type: "linear" }) },
      yaxis: { title: { text: ylabel }, ...(logy ? logAxis(ys) : { type: "linear" }) },
      showlegend: data.length > 1,   // below the plot, so that long entries do not narrow it
      legend: { orientation: "h", x: 0, xanchor: "left", y: -0.14, yanchor: "top" },
      shapes: !mark ? [] : mark.x === undefined
        ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: mark.y, y1: mark.y, line: { dash: "dash", color: "#555" } }]
        : [{ type: "line", x0: mark.x, x1: mark.x, yref: "paper", y0: 0, y1: 1, line: { dash: "dot", color: "#555" } }],
      annotations: !mark ? [] : mark.x === undefined
        ? [{ xref: "paper", x: 0, y: logy ? Math.log10(mark.y) : mark.y, text: mark.label, showarrow: false, xanchor: "left", yanchor: "bottom" }]
        : [{ x: S.logx ? Math.log10(mark.x) : mark.x, y: mark.y === undefined ? 1 : (logy ? Math.log10(mark.y) : mark.y),
             yref: mark.y === undefined ? "paper" : "y", text: mark.label, showarrow: mark.y !== undefined, xanchor: "left" }] };
    await window.Plotly.react("plot", data, layout, { responsive: true, displaylogo: false });
    wireZoomTicks();
  } else {
    const r = await call("/api/render", renderSpec(traces, c, ylabel, title, mark, logy));
    if (r.error) setMessage(r.error); else $("plot").innerHTML = r.svg;   // the server's own SVG (matplotlib)
  }
  if (shown.request !== lastRequest) { $("export-out").hidden = true; shown.exported = null; }
  Object.assign(shown, { request: lastRequest, bound: c.bound, x: c.x.name, symbol: c.symbol, ylabel, title, mark, logy,
                         traces, drawn: shown.drawn + 1 });
}

// a zoom or pan on a log axis: its ticks follow the new range (Plotly gives log axes' ranges in log10)
let zoomWired = false;
function wireZoomTicks() {
  const plot = $("plot");
  if (zoomWired || !plot.on) return;
  zoomWired = true;
  plot.on("plotly_relayout", (ev) => {
    const upd = {};
    for (const ax of ["xaxis", "yaxis"]) {
      const a = plot.layout[ax];
      if (!a || a.type !== "log") continue;
      if (ev[`${ax}.range[0]`] !== undefined || ev[`${ax}.range`] !== undefined) {
        const r = ev[`${ax}.range`] || [ev[`${ax}.range[0]`], ev[`${ax}.range[1]`]];
        const t = logAxis(null, r);
        upd[`${ax}.tickvals`] = t.tickvals; upd[`${ax}.ticktext`] = t.ticktext;
      } else if (ev[`${ax}.autorange`]) {
        const vals = plot.data.filter((d) => d.mode === "lines").flatMap((d) => (ax === "xaxis" ? d.x : d.y));
        const t = logAxis(vals);
        upd[`${ax}.tickvals`] = t.tickvals; upd[`${ax}.ticktext`] = t.ticktext;
      }
    }
    if (Object.keys(upd).length) window.Plotly.relayout(plot, upd);
  });
}

function renderSpec(traces, c, ylabel, title, mark, logy) {
  // a curve with a lower value (a trace with lowerOf naming it) is drawn as a band from lower to upper
  const used = new Set(), series = [];
  for (const t of traces) {
    if (t.lowerOf !== undefined) continue;
    const s = { label: t.label, x: t.x, y: t.y, style: t.style };
    if (t.cite) s.cite = t.cite;
    if (t.status) s.status = t.status;
    const low = traces.find((u) => !used.has(u) && u.lowerOf === t.label && u.bound === t.bound && u.x === t.x);
    if (low) { used.add(low); s.lower = low.y; }
    series.push(s);
  }
  for (const t of traces) if (t.lowerOf !== undefined && !used.has(t)) series.push({ label: t.label, x: t.x, y: t.y, style: t.style });
  return { series, xlabel: c.x.name, ylabel, title, logx: S.logx, logy: logy === undefined ? logY(c) : logy, mark };
}

// The solved answer on the plot, while the page's other parameters are those it was solved at: a point
// (value, achieved) when the solved parameter is the x axis, else a horizontal line at the target.
function solveKey(sf) {
  const params = {};
  for (const p of B.params) if (p.name !== sf) params[p.name] = wire(p, S.values[p.name]);
  return JSON.stringify(params);
}

function solvedMark(c) {
  if (!solved || solved.bound !== c.bound || solved.value === null || solved.key !== solveKey(solved.solve_for)) return null;
  const v = `${solved.solve_for} = ${fmt(solved.value)}`;
  if (solved.solve_for === c.x.name) {
    return solved.achieved === null ? { x: solved.value, label: v }
      : { x: solved.value, y: solved.achieved, label: `${v} (${solved.symbol} = ${fmt(solved.achieved, 4)})` };
  }
  const target = solved.targets["target_" + solved.answer];
  if (target === undefined || (logY(c) && !(target > 0))) return null;
  return { y: target, label: `target ${solved.symbol} = ${fmt(target)}: ${solved.direction} ${v}` };
}

// ------------------------------------------------------------------------------------------------------
// solve

async function solve() {
  const sf = $("solve-for").value, t = $("solve-target").value.trim();
  S.solveFor = sf; S.target = t; syncURL();
  const out = $("solve-result");
  out.replaceChildren();
  if (t === "") { out.textContent = `Expected a ${$("solve-target-name").textContent}.`; return; }
  const params = {};
  for (const p of B.params) if (p.name !== sf) params[p.name] = wire(p, S.values[p.name]);
  const req = { bound: B.id, solve_for: sf, params };
  req[B.target] = num(t);
  out.textContent = "solving…"; shown.solved = null;
  const r = await call("/api/solve", req);
  out.replaceChildren();
  if (r.error) { shown.solved = r; out.textContent = r.error; out.style.color = "#b00"; return; }
  out.style.color = "";
  solved = { ...r, key: solveKey(sf) }; shown.solved = r;
  operationalFrom(r);
  const v = document.createElement("span");
  v.className = "value"; v.textContent = `${sf} = ${fmt(r.value, 10)}`;
  out.append(`${r.direction} `, v, ` (${r.symbol} there = ${fmt(r.achieved, 10)}; ${r.status === "ok" ? r.message : r.status + ": " + r.message}; ${r.elapsed_ms.toFixed(0)} ms) `);
  if (r.value !== null && sf !== S.x && sf !== S.family) {
    const use = document.createElement("button");
    use.type = "button"; use.textContent = "use it";
    use.addEventListener("click", () => {
      S.values[sf] = String(r.value);
      buildParams();
      schedule();
    });
    out.append(use);
  }
  draw();
}

// ------------------------------------------------------------------------------------------------------
// operational reading: the attacker's largest true-positive rate at a false-positive rate, from (eps, delta)
// (Kairouz, Oh, Viswanath 2015 Thm 2.1; Dong, Roth, Su 2019 Eq. 5; amplify_jax.explore.tpr_bound)

function tprBound(eps, delta, fpr) {
  return Math.min(1, Math.exp(eps) * fpr + delta, 1 - Math.exp(-eps) * (1 - delta - fpr));
}

function updateOperational() {
  const out = $("op-result");
  const eps = Number($("op-eps").value), delta = Number($("op-delta").value), fpr = Number($("op-fpr").value);
  shown.operational = null;
  if ($("op-eps").value.trim() === "" || $("op-delta").value.trim() === "") {
    out.textContent = "Solve for a parameter, or type ε and δ."; return;
  }
  for (const [name, v, hi] of [["ε", eps, Infinity], ["δ", delta, 1], ["false-positive rate", fpr, 1]]) {
    if (!Number.isFinite(v) && !(hi === Infinity && v === Infinity) || v < 0 || v > hi) {
      out.textContent = `Expected ${name} in [0, ${hi}], got ${JSON.stringify(v)}.`; return;
    }
  }
  const tpr = tprBound(eps, delta, fpr);
  shown.operational = { epsilon: eps, delta, fpr, tpr };
  out.replaceChildren();
  const v = document.createElement("span");
  v.className = "value"; v.id = "op-tpr"; v.textContent = fmt(tpr, 6);
  out.append(`An attacker testing whether one person's data was used, wrong on ${fmt(100 * fpr, 4)}% of the people ` +
    "not in the data, finds at most ", v, ` of those in it (true-positive rate; a random guess finds ${fmt(fpr, 4)}) ` +
    `under (ε = ${fmt(eps)}, δ = ${fmt(delta)})-DP.`);
}

function operationalFrom(r) {   // a solved point: its (eps, delta)
  if (!r || r.value === null || r.achieved === null) return;
  const eps = r.answer === "epsilon" ? r.achieved : r.params.epsilon;
  const delta = r.answer === "delta" ? r.achieved : (r.targets.target_delta ?? r.params.delta);
  if (eps === undefined || delta === undefined) return;
  $("op-eps").value = String(eps); $("op-delta").value = String(delta);
  updateOperational();
}

// ------------------------------------------------------------------------------------------------------
// export: PNG (matplotlib on the server), CSV (the curves shown), the command and the Python call

function download(name, href) {
  const a = document.createElement("a");
  a.href = href; a.download = name;
  document.body.appendChild(a); a.click(); a.remove();
}

function csvField(v) {
  if (v === null || v === undefined) return "";
  const t = String(v);          // numbers: JavaScript's shortest round-trip text
  return /[",\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

function shownCSV() {
  const answer = lastCurve ? lastCurve.answer : "value";
  const lines = [["curve", shown.x, answer].join(",")];
  for (const t of shown.traces) {
    for (let i = 0; i < t.x.length; i++) lines.push([csvField(t.label), csvField(t.x[i]), csvField(t.y[i])].join(","));
  }
  return lines.join("\n") + "\n";
}

function fileStem() { return `${shown.bound}-${shown.x}`.replace(/[^A-Za-z0-9._-]/g, "_"); }

async function exportPNG() {
  if (!lastCurve) return;
  const r = await call("/api/render", { ...renderSpec(shown.traces, lastCurve, shown.ylabel, shown.title, shown.mark, shown.logy),
                                         format: "png" });
  if (r.error) { setMessage(`PNG: ${r.error}`); return; }
  download(fileStem() + ".png", "data:image/png;base64," + r.png);
}

function exportCSV() {
  if (!lastCurve) return;
  download(fileStem() + ".csv", URL.createObjectURL(new Blob([shownCSV()], { type: "text/csv" })));
}

async function exportCode() {
  if (!shown.request) return;
  const r = await call("/api/export", shown.request);
  if (r.error) { setMessage(`export: ${r.error}`); return; }
  $("export-command-note").textContent = "Command (prints CSV, one row per point" +
    (r.row_order.length > 1 ? `, ${r.row_order[0]} the outer loop` : "") +
    (lastCurve && lastCurve.answer === "rdp" ? ", one column per Rényi order" : "") + "):";
  $("export-command").textContent = r.command;
  $("export-python").textContent = r.python;
  $("export-out").hidden = false;
  shown.exported = r;
}

// ------------------------------------------------------------------------------------------------------
// sweep stores: the ones the server was started with (--sweep), named by index; sliced on the server

const SW = { fixed: {} };

function swStore() { return CAT.sweeps[Number($("sweep-store").value) || 0]; }

function fillSelect(sel, names, value) {
  sel.replaceChildren();
  for (const n of names) { const o = document.createElement("option"); o.value = n; o.textContent = n || "(none)"; sel.appendChild(o); }
  if (value !== undefined && names.includes(value)) sel.value = value;
}

function buildSweep() {
  const st = swStore();
  const dims = st.dims.map((d) => d.name);
  fillSelect($("sweep-var"), st.variables, st.default);
  fillSelect($("sweep-x"), dims, $("sweep-x").value || dims[0]);
  buildSweepAxes();
  $("sweep-about").textContent = `${st.name}: ${st.bound || "?"} (${st.quantity || "?"}${st.solve_for ? ", solved for " + st.solve_for : ""}) — ` +
    `${st.paper || ""}; ${st.theorem || ""}. Dimensions: ${st.dims.map((d) => `${d.name} (${d.size})`).join(", ")}.`;
}

function buildSweepAxes() {
  const st = swStore(), x = $("sweep-x").value;
  const others = st.dims.map((d) => d.name).filter((n) => n !== x);
  const y = others.includes($("sweep-y").value) ? $("sweep-y").value : (others[0] || "");
  fillSelect($("sweep-y"), [""].concat(others), y);
  const dx = st.dims.find((d) => d.name === x);
  $("sweep-logx").checked = dx ? dx.log : false;
  const table = $("sweep-fixed");
  table.replaceChildren();
  for (const d of st.dims) {
    if (d.name === x || d.name === $("sweep-y").value) continue;
    const i = Math.min(SW.fixed[d.name] || 0, d.size - 1);
    SW.fixed[d.name] = i;
    const tr = document.createElement("tr");
    const name = document.createElement("td"); name.className = "name"; name.textContent = d.name;
    const ctl = document.createElement("td"), val = document.createElement("td");
    const slider = document.createElement("input");
    slider.type = "range"; slider.min = 0; slider.max = d.size - 1; slider.step = 1; slider.value = i;
    slider.id = "sweep-fixed-" + d.name; slider.disabled = d.size < 2;
    val.id = "sweep-fixed-value-" + d.name; val.textContent = `${d.name} = ${fmt(d.values[i])} (index ${i} of ${d.size})`;
    slider.addEventListener("input", () => {
      const k = Number(slider.value); SW.fixed[d.name] = k;
      val.textContent = `${d.name} = ${fmt(d.values[k])} (index ${k} of ${d.size})`;
      sweepSchedule();
    });
    ctl.append(slider); tr.append(name, ctl, val); table.appendChild(tr);
  }
}

let swTimer = null, swBusy = false, swPending = false;
function sweepSchedule() { shown.sweepSettled = false; clearTimeout(swTimer); swTimer = setTimeout(sweepDraw, 100); }

async function sweepDraw() {
  if (swBusy) { swPending = true; return; }
  swBusy = true; swPending = false;
  const st = swStore(), y = $("sweep-y").value;
  const fixed = {};
  for (const d of st.dims) if (d.name !== $("sweep-x").value && d.name !== y) fixed[d.name] = SW.fixed[d.name] || 0;
  const req = { store: st.id, var: $("sweep-var").value, x: $("sweep-x").value, y: y || null, fixed,
                kind: $("sweep-kind").value, logx: $("sweep-logx").checked, logy: $("sweep-logy").checked,
                logz: $("sweep-logz").checked };
  const r = await call("/api/sweep", req);
  if (r.error) {
    $("sweep-message").textContent = r.error;
  } else {
    $("sweep-message").textContent = "";
    $("sweep-plot").innerHTML = r.svg;   // the server's own SVG (matplotlib)
    $("sweep-notes").textContent = (r.notes || []).join("; ");
  }
  shown.sweep = { request: req, answer: r, drawn: ((shown.sweep && shown.sweep.drawn) || 0) + 1 };
  swBusy = false;
  if (swPending) sweepDraw(); else shown.sweepSettled = true;
}

function wireSweeps() {
  if (!CAT.sweeps || !CAT.sweeps.length) return;
  $("sweep-section").hidden = false;
  fillSelect($("sweep-store"), CAT.sweeps.map((s) => String(s.id)));
  for (const o of $("sweep-store").options) o.textContent = `${o.value}: ${CAT.sweeps[Number(o.value)].name}`;
  $("sweep-store").addEventListener("change", () => { SW.fixed = {}; $("sweep-x").value = ""; buildSweep(); sweepSchedule(); });
  $("sweep-x").addEventListener("change", () => { buildSweepAxes(); sweepSchedule(); });
  $("sweep-y").addEventListener("change", () => { buildSweepAxes(); sweepSchedule(); });
  for (const id of ["sweep-var", "sweep-kind", "sweep-logx", "sweep-logy", "sweep-logz"]) $(id).addEventListener("change", sweepSchedule);
  buildSweep();
  sweepSchedule();
}

// ------------------------------------------------------------------------------------------------------
// wiring

async function pinCurrent(req) {
  const r = req ? await call("/api/curve", req) : lastCurve;
  if (!r || r.error) { if (r) setMessage(`pinned curve: ${r.error}`); return; }
  pins.push({ request: req || lastRequest, x: r.x.name, traces: curveTraces(r, r.bound) });
}

function wireEvents() {
  $("bound").addEventListener("change", () => {
    B = BOUNDS[$("bound").value]; defaults(B); solved = null; showBound(); schedule();
  });
  $("x").addEventListener("change", () => {
    S.x = $("x").value; if (S.family === S.x) { S.family = ""; S.fv = ""; }
    S.logy = null; axisDefaults(); buildAxes(); buildParams(); schedule();
  });
  $("family").addEventListener("change", () => { S.family = $("family").value; S.fv = ""; buildAxes(); buildParams(); schedule(); });
  for (const k of ["lo", "hi", "points"]) $(k).addEventListener("change", () => { S[k] = $(k).value.trim(); schedule(); });
  $("family-values").addEventListener("change", () => { S.fv = $("family-values").value.trim(); schedule(); });
  $("logx").addEventListener("change", () => { S.logx = $("logx").checked; schedule(); });
  $("logy").addEventListener("change", () => { S.logy = $("logy").checked; syncURL(); draw(); });
  $("solve-for").addEventListener("change", () => { S.solveFor = $("solve-for").value; updateSolveDirection(); syncURL(); });
  $("solve").addEventListener("click", solve);
  $("solve-target").addEventListener("keydown", (e) => { if (e.key === "Enter") solve(); });
  $("pin").addEventListener("click", async () => {
    if (pins.length >= MAX_PINS) { setMessage(`at most ${MAX_PINS} pinned curves`); return; }
    await pinCurrent(null); syncURL(); draw();
  });
  $("unpin").addEventListener("click", () => { pins = []; syncURL(); draw(); });
  for (const id of ["op-eps", "op-delta", "op-fpr"]) $(id).addEventListener("input", updateOperational);
  $("export-png").addEventListener("click", exportPNG);
  $("export-csv").addEventListener("click", exportCSV);
  $("export-code").addEventListener("click", exportCode);
}

async function main() {
  setStatus("loading the catalog…", true);
  CAT = await call("/api/catalog");
  if (CAT.error) { setMessage(CAT.error); setStatus("", false); return; }
  if (CAT.plotting === "plotly") {
    await new Promise((resolve) => {
      const s = document.createElement("script");
      s.src = "/static/plotly.min.js"; s.onload = resolve; s.onerror = resolve;
      document.head.appendChild(s);
    });
  }
  fillBoundSelect();
  wireSweeps();
  const pinned = readURL();
  showBound();
  wireEvents();
  for (const text of pinned) {
    let req = null;
    try { req = JSON.parse(text); } catch (e) { setMessage("a pinned curve in the URL is not JSON: ignored"); }
    if (req && typeof req === "object") await pinCurrent(req);
  }
  syncURL();
  redraw();
}

main();
