// Calls to the node's /v1 API with the bearer token.
//
// The token lives in sessionStorage: it survives a reload of the tab but
// not the tab itself, and other tabs and sites cannot read it. It is never
// put in a URL and never in a cookie, so a forged cross-site request
// carries no credential (no CSRF).

const KEY = "evoclaw.token";
const listeners = [];

export const token = {
  get: () => sessionStorage.getItem(KEY) || "",
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

// onUnauthorized registers fn, called when the node refuses the token.
export function onUnauthorized(fn) { listeners.push(fn); }

// APIError carries the node's error body ({"error": {message, type, param}}).
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || "HTTP " + status);
    this.status = status;
    this.type = e.type || "";
    this.param = e.param || null;
    this.body = body;
  }
}

// call fetches path with the token; it returns the Response, throwing
// APIError for an error status (after telling listeners about a 401).
export async function call(path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  headers.set("Authorization", "Bearer " + (opts.token ?? token.get()));
  if (opts.body !== undefined && typeof opts.body !== "string") {
    headers.set("Content-Type", "application/json");
    opts = { ...opts, body: JSON.stringify(opts.body) };
  }
  const resp = await fetch(path, { ...opts, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
  if (resp.ok || resp.status === 304) return resp;
  let body = null;
  try { body = await resp.json(); } catch { /* not JSON */ }
  if (resp.status === 401) listeners.forEach((fn) => fn());
  throw new APIError(resp.status, body);
}

// json is call plus the decoded body.
export async function json(path, opts) {
  const resp = await call(path, opts);
  return resp.json();
}
