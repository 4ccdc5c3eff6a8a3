// DOM helpers. Text always goes in through textContent: nothing the node
// or an agent sends is ever parsed as HTML.

// el builds an element: attrs are set as attributes (class, for, aria-*,
// data-*), except "text" (textContent) and "on*" functions (listeners).
// Children are nodes or strings (text nodes).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = String(v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

// svg builds an SVG element the same way.
export function svg(tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

export const $ = (id) => document.getElementById(id);

// setText changes a node's text only when it differs: no needless layout.
export function setText(node, text) {
  text = String(text);
  if (node.textContent !== text) node.textContent = text;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
}

// ago renders the time since an RFC 3339 time: "4 s ago", "3 min ago".
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (!iso || isNaN(t) || t <= 0) return "never";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}

// clock renders an RFC 3339 time as local HH:MM:SS (with the date when it
// is not today).
export function clock(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return "";
  const time = d.toLocaleTimeString([], { hour12: false });
  return d.toDateString() === new Date().toDateString() ? time : d.toLocaleDateString() + " " + time;
}

// cut shortens text for a table cell; the full text goes in a title.
export function cut(text, n) {
  text = String(text ?? "");
  return text.length <= n ? text : text.slice(0, n - 1) + "…";
}
