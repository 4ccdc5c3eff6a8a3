// Audit: the hash chain's last verification, the tiers, the live feed of
// tool calls from the hot tier (a long poll of /v1/logs), and read-only SQL.
import { $, el, setText, clear, clock, cut, shown } from "./dom.js";
import { call, json, APIError } from "./api.js";

const KEEP = 500; // feed entries kept
const WAIT = "25s";
let entries = [];
let head = null;
let feedCtl = null; // AbortController of the long poll; null when stopped
let lastStatus = null;
let tierStatus = null;
let reports = [];

export function init() {
  for (const id of ["feed-agent", "feed-tool", "feed-status", "feed-conv"]) $(id).addEventListener("input", renderFeed);
  $("verify-run").addEventListener("click", () => verify("POST"));
  $("sql-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    runSQL();
  });
  $("sql-report").addEventListener("change", pickReport);
}

export function show() {
  verify("GET");
  loadTiers();
  loadReports();
  startFeed();
}

export function hide() {
  if (feedCtl) feedCtl.abort();
  feedCtl = null;
}

// status receives every /v1/status sample.
export function status(st) {
  lastStatus = st;
  if (!$("view-audit").hidden) renderTiers();
}

async function verify(method) {
  const out = $("verify-result");
  $("verify-run").disabled = true;
  setText(out, method === "POST" ? "Verifying the whole chain…" : "Reading the last verification…");
  try {
    const v = await json("/v1/audit/verify", { method });
    clear(out);
    const what = `${v.verified} records, chain_seq ${v.start_seq + 1}..${v.head_seq}` + (v.key_id ? `, start and head authenticated by key ${v.key_id}` : ", consistency only (no key)");
    out.append(
      el("span", { class: "pill " + (v.ok ? "ok" : "bad"), text: v.ok ? "intact" : "BROKEN" }), " ",
      shown(v.ok ? what : v.error), " ",
      el("span", { class: "muted", text: `(checked ${clock(v.checked_at)} in ${v.elapsed_ms} ms)` }));
    if (v.broken) out.append(el("br"), shown(`first broken record: ${v.broken.table} ${v.broken.record_id} (chain_seq ${v.broken.seq})`));
  } catch (err) {
    setText(out, "Cannot verify: " + err.message);
  } finally {
    $("verify-run").disabled = false;
  }
}

async function loadTiers() {
  try {
    tierStatus = await json("/v1/audit/status");
  } catch (err) {
    tierStatus = { error: err.message };
  }
  renderTiers();
}

function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + " GiB";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  return Math.round(n / 1024) + " KiB";
}

function duration(s) {
  if (!s) return "";
  if (s >= 86400) return (s / 86400).toFixed(s % 86400 ? 1 : 0) + " d";
  if (s >= 3600) return (s / 3600).toFixed(1) + " h";
  return Math.round(s) + " s";
}

function renderTiers() {
  const dl = $("tiers");
  clear(dl);
  const fact = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: v }));
  const t = tierStatus;
  if (t && t.error) fact("warm", "cannot read: " + t.error);
  else if (t) {
    fact("warm", `${t.records} records (chain_seq ${t.chain_start + 1}..${t.head_seq}), ${bytes(t.used_bytes)}`);
    fact("warm window", t.oldest ? `from ${clock(t.oldest)} to now` : "empty");
    fact("retention", t.cold_tier ? `kept ${duration(t.warm_window_s)} once shipped` :
      [t.max_age_s ? "max age " + duration(t.max_age_s) : "", t.max_bytes ? "max " + bytes(t.max_bytes) : ""].filter(Boolean).join(", ") || "keeps everything");
  }
  const st = lastStatus;
  if (!st) return;
  const a = st.audit || {};
  const cold = a.Cold;
  fact("cold tier", cold ? `lag ${cold.Lag} records (shipped to chain_seq ${cold.ShippedSeq}, last ${cold.LastShip && !cold.LastShip.startsWith("0001") ? clock(cold.LastShip) : "never"})` +
    (cold.LastError ? `; failing: ${cold.LastError}` : "") : "not configured");
  const r = a.Retention || {};
  if (r.TotalDeleted) fact("pruned", `${r.TotalDeleted} records since start (${r.LastReason || ""})`);
  if (r.LastError) fact("retention error", r.LastError);
  const w = st.audit_write || {};
  fact("writes", w.failing ? "FAILING: " + (w.last_error || "") : "ok" + (w.free_bytes >= 0 ? `, ${bytes(w.free_bytes)} free` : ""));
}

async function loadReports() {
  if (reports.length) return;
  try {
    reports = (await json("/v1/audit/reports")).reports;
  } catch {
    return;
  }
  const sel = $("sql-report");
  for (const r of reports) sel.append(el("option", { value: r.name, text: `${r.name}: ${r.doc}` }));
}

function pickReport() {
  const r = reports.find((x) => x.name === $("sql-report").value);
  $("sql-arg").hidden = $("sql-arg-label").hidden = !(r && r.arg);
  if (r) {
    $("sql-text").value = r.query;
    setText($("sql-arg-label"), r.arg || "Argument");
  }
}

async function runSQL() {
  const state = $("sql-state");
  const table = $("sql-result");
  const r = reports.find((x) => x.name === $("sql-report").value);
  // A report runs by name unless its SQL was edited.
  const body = r && $("sql-text").value === r.query ? { report: r.name, arg: r.arg ? $("sql-arg").value : undefined } : { sql: $("sql-text").value };
  $("sql-run").disabled = true;
  state.className = "";
  setText(state, "Running…");
  clear(table);
  try {
    const res = await json("/v1/audit/sql", { method: "POST", body });
    setText(state, `${res.rows.length} rows in ${res.elapsed_ms} ms` + (res.truncated ? " (cut: the query has more rows; narrow it)" : ""));
    table.append(el("thead", {}, el("tr", {}, ...res.columns.map((c) => el("th", { text: c })))));
    const tb = el("tbody");
    for (const row of res.rows) tb.append(el("tr", {}, ...row.map((v) => cell(v))));
    table.append(tb);
  } catch (err) {
    const refused = err instanceof APIError && err.status === 403;
    state.className = refused ? "refused" : "error";
    setText(state, (refused ? "Refused: " : "Error: ") + err.message);
  } finally {
    $("sql-run").disabled = false;
  }
}

function cell(v) {
  const text = v === null ? "NULL" : String(v);
  return el("td", { class: v === null ? "null" : typeof v === "number" ? "num" : "", title: text.length > 120 ? text : null, text: cut(text, 120) });
}

async function startFeed() {
  if (feedCtl) return;
  const ctl = new AbortController();
  feedCtl = ctl;
  setText($("feed-state"), "Waiting for tool calls…");
  let backoff = 1000;
  while (feedCtl === ctl) {
    const q = head === null ? "kind=tool&limit=200" : `kind=tool&limit=200&after=${head}&wait=${WAIT}`;
    try {
      const page = await json("/v1/logs?" + q, { signal: ctl.signal });
      head = page.head;
      if (page.entries.length) {
        entries = entries.concat(page.entries).slice(-KEEP);
        renderFeed();
      }
      setText($("feed-state"), `live: ${entries.length} recent tool calls (newest first)`);
      backoff = 1000;
    } catch (err) {
      if (ctl.signal.aborted) return;
      setText($("feed-state"), "Feed interrupted (" + err.message + "); retrying…");
      await new Promise((res) => setTimeout(res, backoff));
      backoff = Math.min(backoff * 2, 15000);
    }
  }
}

function renderFeed() {
  const f = {
    agent: $("feed-agent").value.trim(),
    tool: $("feed-tool").value.trim(),
    status: $("feed-status").value,
    conv: $("feed-conv").value.trim(),
  };
  const tb = $("feed").tBodies[0];
  clear(tb);
  let shown = 0;
  for (let i = entries.length - 1; i >= 0 && shown < 200; i--) {
    const e = entries[i];
    if ((f.agent && !(e.agent_id || "").includes(f.agent)) || (f.tool && !e.name.includes(f.tool)) ||
        (f.status && e.status !== f.status) || (f.conv && !(e.conversation_id || "").includes(f.conv))) continue;
    shown++;
    tb.append(el("tr", { class: e.status === "error" ? "failed" : "" },
      el("td", { text: clock(e.time) }), el("td", { text: e.agent_id || "" }), el("td", { text: e.name }),
      el("td", {}, el("span", { class: "pill " + (e.status === "success" ? "ok" : "bad"), text: e.status || "" })),
      el("td", { text: cut(e.detail || "", 160), title: e.detail || null }), el("td", { text: e.conversation_id || "" })));
  }
}
