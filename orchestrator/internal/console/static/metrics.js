// Metrics: the node's counters (/v1/status, sampled by app.js every few
// seconds) turned into rates over time and drawn as small SVG line charts.
// Samples live in this page only: a reload starts the history again.
import { $, el, svg, clear, setText } from "./dom.js";

const KEEP = 120; // samples: 6 minutes at one per 3 s
const SERIES = 6; // busiest tools drawn
const W = 600, H = 150, PAD = 34;
const samples = []; // {t, tools: {key: {calls, errors, timeouts, totalMs}}}
let latest = null;

export function init() {}
export function show() { render(); }
export function hide() {}

// sample records one /v1/status answer.
export function sample(st) {
  latest = st;
  const tools = {};
  const add = (key, s) => { tools[key] = { calls: s.calls, errors: s.errors, timeouts: s.timeouts, totalMs: s.avg_ms * s.calls }; };
  for (const a of st.agents || []) for (const s of a.tool_stats || []) add(a.id + " " + s.name, s);
  for (const s of st.node_tools || []) add("node " + s.name, s);
  const m = st.metrics || {};
  tools["llm"] = { calls: m.LLMCalls || 0, errors: m.LLMErrors || 0, timeouts: 0, totalMs: 0 };
  samples.push({ t: Date.now(), tools });
  if (samples.length > KEEP) samples.shift();
  if (!$("view-metrics").hidden) render();
}

// rates turns consecutive samples into per-interval values of f(delta).
function rates(key, f) {
  const pts = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1].tools[key], b = samples[i].tools[key];
    const dt = (samples[i].t - samples[i - 1].t) / 1000;
    if (!b || dt <= 0) continue;
    const z = { calls: 0, errors: 0, timeouts: 0, totalMs: 0 };
    const d = {};
    for (const k of Object.keys(z)) d[k] = Math.max(0, b[k] - (a || z)[k]);
    const v = f(d, dt);
    if (v !== null) pts.push([samples[i].t, v]);
  }
  return pts;
}

function render() {
  if (!latest) return;
  const last = samples[samples.length - 1];
  const keys = Object.keys(last.tools).filter((k) => k !== "llm" && last.tools[k].calls > 0)
    .sort((a, b) => last.tools[b].calls - last.tools[a].calls).slice(0, SERIES);
  const charts = $("charts");
  clear(charts);
  setText($("metrics-note"), `Sampled from /v1/status every 3 s while this page is open: ${samples.length} samples.`);
  charts.append(
    chart("Tool calls per minute", keys.concat(["llm"]), (k) => rates(k, (d, dt) => (d.calls * 60) / dt)),
    chart("Errors per minute (timeouts included)", keys, (k) => rates(k, (d, dt) => (d.errors * 60) / dt)),
    chart("Timeouts per minute", keys, (k) => rates(k, (d, dt) => (d.timeouts * 60) / dt)),
    chart("Average latency per interval (ms)", keys, (k) => rates(k, (d) => (d.calls ? d.totalMs / d.calls : null))));
  renderTable();
}

function chart(title, keys, seriesOf) {
  const series = keys.map((k) => ({ key: k, pts: seriesOf(k) }));
  const t1 = samples[samples.length - 1].t, t0 = Math.min(samples[0].t, t1 - 60000);
  let ymax = 0;
  for (const s of series) for (const [, v] of s.pts) ymax = Math.max(ymax, v);
  ymax = niceMax(ymax);
  const x = (t) => PAD + ((t - t0) / (t1 - t0)) * (W - PAD - 8);
  const y = (v) => H - 18 - (v / ymax) * (H - 30);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title });
  g.append(
    svg("line", { x1: PAD, y1: y(0), x2: W - 8, y2: y(0), class: "axis" }),
    svg("line", { x1: PAD, y1: y(ymax), x2: W - 8, y2: y(ymax), class: "grid" }),
    svg("text", { x: PAD - 4, y: y(ymax) + 4, class: "tick end", text: fmt(ymax) }),
    svg("text", { x: PAD - 4, y: y(0) + 4, class: "tick end", text: "0" }),
    svg("text", { x: PAD, y: H - 3, class: "tick", text: "-" + Math.round((t1 - t0) / 60000) + " min" }),
    svg("text", { x: W - 8, y: H - 3, class: "tick end", text: "now" }));
  series.forEach((s, i) => {
    if (!s.pts.length) return;
    g.append(svg("polyline", { points: s.pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: "line c" + i }));
    // The newest point as a dot: a series of one point has no line.
    const [t, v] = s.pts[s.pts.length - 1];
    g.append(svg("circle", { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 3, class: "dot c" + i }));
  });
  const legend = el("ul", { class: "legend" }, ...series.map((s, i) => el("li", { class: "c" + i, text: s.key })));
  return el("figure", { class: "panel" }, el("figcaption", { text: title }), g, legend);
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmt(v) {
  return v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2);
}

function renderTable() {
  const table = $("metrics-table");
  clear(table);
  table.append(el("caption", { text: "Since the node started" }),
    el("thead", {}, el("tr", {}, ...["agent", "tool", "calls", "errors", "timeouts", "avg ms", "max ms"].map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  const row = (agent, s) => tb.append(el("tr", {}, el("td", { text: agent }), el("td", { text: s.name }),
    ...[s.calls, s.errors, s.timeouts, s.avg_ms.toFixed(1), s.max_ms].map((v) => el("td", { class: "num", text: v }))));
  for (const a of latest.agents || []) for (const s of a.tool_stats || []) row(a.id, s);
  for (const s of latest.node_tools || []) row("(node)", s);
  const m = latest.metrics || {};
  tb.append(el("tr", {}, el("td", { text: "(node)" }), el("td", { text: "LLM completions" }),
    el("td", { class: "num", text: m.LLMCalls || 0 }), el("td", { class: "num", text: m.LLMErrors || 0 }), el("td"), el("td"), el("td")));
  table.append(tb);
}
