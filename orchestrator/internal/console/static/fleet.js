// Fleet: every agent the node knows, polled every second with an ETag
// (an unchanged fleet costs the node a 304), and updated in place: a card
// changes only the text that changed.
import { $, el, setText, clear, ago } from "./dom.js";
import { call } from "./api.js";

const EVERY_MS = 1000;
let timer = 0;
let etag = "";
let agents = [];
const cards = new Map(); // agent id -> {root, badge, seen, inflight, caps, tools, toolsKey}

export function init() {}

export function show() {
  etag = "";
  poll();
}

export function hide() {
  clearTimeout(timer);
  timer = 0;
}

async function poll() {
  timer = -1;
  try {
    const resp = await call("/v1/agents", { headers: etag ? { "If-None-Match": etag } : {} });
    if (resp.status !== 304) {
      etag = resp.headers.get("ETag") || "";
      agents = (await resp.json()).agents;
    }
    render();
  } catch (err) {
    setText($("fleet-summary"), "Cannot read the fleet: " + err.message);
  }
  if (timer === -1) timer = setTimeout(poll, EVERY_MS);
}

const empty = el("p", { class: "muted", text: "No agent has connected to this node yet." });

function render() {
  const online = agents.filter((a) => a.online).length;
  setText($("fleet-summary"), `${agents.length} agent${agents.length === 1 ? "" : "s"}, ${online} online`);
  const box = $("fleet-agents");
  const seen = new Set();
  agents.forEach((a, i) => {
    seen.add(a.id);
    let c = cards.get(a.id);
    if (!c) {
      c = newCard(a.id);
      cards.set(a.id, c);
    }
    // Move a card only when it is out of place (the list is sorted by id).
    if (box.children[i] !== c.root) box.insertBefore(c.root, box.children[i] || null);
    update(c, a);
  });
  for (const [id, c] of cards) {
    if (!seen.has(id)) {
      c.root.remove();
      cards.delete(id);
    }
  }
  if (agents.length) empty.remove();
  else if (!empty.isConnected) box.append(empty);
}

function newCard(id) {
  const c = {
    badge: el("span", { class: "pill" }),
    caps: el("p", { class: "caps" }),
    // Why the agent's audit trail cannot write, as its status said; as text.
    norec: el("p", { class: "norec", hidden: "" }),
    seen: el("span"),
    inflight: el("span"),
    tools: el("div", { class: "tools" }),
    toolsKey: null,
  };
  c.root = el("article", { class: "card agent", "data-agent": id },
    el("header", {}, el("h2", { text: id }), c.badge),
    c.norec,
    c.caps,
    el("p", { class: "muted" }, "last heard ", c.seen, " · ", c.inflight),
    c.tools);
  return c;
}

function update(c, a) {
  const norec = a.online && a.not_recording ? a.not_recording : "";
  setText(c.badge, a.online ? (norec ? "online, not recording" : "online") : "offline");
  c.badge.className = "pill " + (a.online && !norec ? "ok" : "bad");
  setText(c.norec, norec ? `Not recording: ${norec}. It refuses every command until its audit trail can write.` : "");
  c.norec.hidden = !norec;
  c.root.dataset.online = String(a.online);
  setText(c.caps, a.capabilities || "(no capability line)");
  setText(c.seen, ago(a.last_seen));
  setText(c.inflight, `${a.in_flight} call${a.in_flight === 1 ? "" : "s"} in flight`);
  const key = JSON.stringify(a.tools.map((t) => [t.name, t.description, t.parameters, t.timeout_ms, t.permissions, t.sandboxing, t.stats]));
  if (key === c.toolsKey) return;
  c.toolsKey = key;
  // <details> keep their open state across updates.
  const open = new Set([...c.tools.querySelectorAll("details[open]")].map((d) => d.dataset.tool));
  clear(c.tools);
  if (!a.tools.length) {
    c.tools.append(el("p", { class: "muted", text: a.online ? (a.listing ? "listing tools…" : "no tools") : "tools unknown while offline" }));
    return;
  }
  for (const t of a.tools) c.tools.append(toolDetails(t, open.has(t.name)));
}

function toolDetails(t, open) {
  const s = t.stats;
  const facts = el("dl", { class: "facts" },
    el("dt", { text: "timeout" }), el("dd", { text: t.timeout_ms ? t.timeout_ms + " ms" : "agent default" }),
    el("dt", { text: "permissions" }), el("dd", { text: t.permissions.length ? t.permissions.join(", ") : "none" }),
    t.sandboxing && el("dt", { text: "sandbox" }), t.sandboxing && el("dd", { text: t.sandboxing }),
    t.category && el("dt", { text: "category" }), t.category && el("dd", { text: t.category }),
    el("dt", { text: "calls" }), el("dd", { text: `${s.calls} (${s.errors} errors, ${s.timeouts} timeouts), avg ${s.avg_ms.toFixed(0)} ms, max ${s.max_ms} ms` }));
  return el("details", { "data-tool": t.name, open },
    el("summary", {}, el("strong", { text: t.name }), " ", el("span", { class: "muted", text: t.description })),
    facts,
    el("pre", { class: "schema", text: JSON.stringify(t.parameters, null, 2) }));
}

// tick refreshes "last heard" between polls that brought nothing new.
setInterval(() => {
  if (!timer) return;
  for (const a of agents) {
    const c = cards.get(a.id);
    if (c) setText(c.seen, ago(a.last_seen));
  }
}, 1000);
