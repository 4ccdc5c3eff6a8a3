// DOM helpers. Text always goes in through textContent: nothing the node
// or an agent sends is ever parsed as HTML. And it goes in through shown:
// no character it holds can make it read other than what it says.

// hidden matches what shown escapes: the control characters but tab,
// newline and carriage return, and the invisible format characters
// (Unicode's Cf) but the two joiners, which scripts and emoji need. Shown
// raw, a right-to-left override (U+202E) makes a tool name, an argument or
// an output read other than what it holds, and carries on into the
// elements after it (a tool's description, the next cell); zero-width and
// tag characters hide text in what looks like plain words.
const hidden = /[\0-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|(?![\u200c\u200d])\p{Cf}/gu;

// shown returns text as the page shows it: each hidden character written
// as an escape, as `evoclaw audit sql` prints it (\x1b, \u202e,
// \U000e0041), everything else as it is.
export function shown(text) {
  return String(text).replace(hidden, (c) => {
    const n = c.codePointAt(0);
    if (n < 0x80) return "\\x" + n.toString(16).padStart(2, "0");
    return n > 0xffff ? "\\U" + n.toString(16).padStart(8, "0") : "\\u" + n.toString(16).padStart(4, "0");
  });
}

// shownAttrs are the attributes the browser shows to the person.
const shownAttrs = new Set(["title", "aria-label"]);

// el builds an element: attrs are set as attributes (class, for, aria-*,
// data-*), except "text" (textContent) and "on*" functions (listeners).
// Children are nodes or strings (text nodes). Text, strings and the
// attributes a person sees go in through shown.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = shown(v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : shownAttrs.has(k) ? shown(v) : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === "string" ? document.createTextNode(shown(c)) : c);
  }
  return e;
}

// svg builds an SVG element the same way.
export function svg(tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = shown(v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

export const $ = (id) => document.getElementById(id);

// setText changes a node's text (through shown) only when it differs: no
// needless layout.
export function setText(node, text) {
  text = shown(text);
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
