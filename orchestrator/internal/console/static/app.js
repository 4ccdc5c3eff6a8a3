// The console's entry point: sign-in, the tabs, and the one status poll
// that feeds the header, the audit tiers and the metrics.
import { $, setText, shown, cut } from "./dom.js";
import { token, json, onUnauthorized, APIError } from "./api.js";
import * as fleet from "./fleet.js";
import * as chat from "./chat.js";
import * as audit from "./audit.js";
import * as metrics from "./metrics.js";

const views = { fleet, chat, audit, metrics };
const STATUS_EVERY_MS = 3000;
let current = "";
let statusTimer = 0;

function showLogin(message) {
  stopAll();
  $("login").hidden = false;
  $("tabs").hidden = true;
  $("logout").hidden = true;
  $("node-ready").hidden = true;
  $("node-llm").hidden = true;
  for (const name of Object.keys(views)) $("view-" + name).hidden = true;
  setText($("login-error"), message || "");
  $("token").focus();
}

function stopAll() {
  clearTimeout(statusTimer);
  statusTimer = 0;
  if (current) views[current].hide();
  current = "";
}

async function signIn(t) {
  // One authenticated call proves the token before it is kept.
  const st = await json("/v1/status", { token: t });
  token.set(t);
  $("login").hidden = true;
  $("tabs").hidden = false;
  $("logout").hidden = false;
  onStatus(st);
  select(hashView());
  statusTimer = setTimeout(pollStatus, STATUS_EVERY_MS);
}

// hashView is the view the fragment names (#chat, #chat/ID). The fragment
// is anyone's to write (a link): only a view's own name picks it, not a
// name every object has ("#constructor"); anything else is the fleet.
function hashView() {
  const name = location.hash.slice(1).split("/")[0];
  return Object.hasOwn(views, name) ? name : "fleet";
}

// select shows the view name. A tab the person picks (push) is a history
// entry, so that Back returns to the view before it.
function select(name, push) {
  if (location.hash.slice(1).split("/")[0] !== name) history[push ? "pushState" : "replaceState"](null, "", "#" + name);
  if (name === current) return;
  if (current) {
    views[current].hide();
    $("view-" + current).hidden = true;
  }
  current = name;
  for (const b of document.querySelectorAll("#tabs button")) {
    const on = b.dataset.view === name;
    b.setAttribute("aria-current", on ? "page" : "false");
  }
  $("view-" + name).hidden = false;
  views[name].show();
  // The metrics page starts from a fresh sample rather than one up to 3 s old.
  if (name === "metrics") pollStatus();
}

function onStatus(st) {
  setText($("node-id"), "node " + st.node_id);
  const ready = $("node-ready");
  ready.hidden = false;
  const ok = st.ready && st.ready.ready;
  setText(ready, ok ? "ready" : "not ready");
  ready.className = "pill " + (ok ? "ok" : "bad");
  ready.title = ok ? "" : shown((st.ready.checks || []).filter((c) => !c.ok).map((c) => c.name + ": " + (c.reason || "")).join("; "));
  // Who answers the chats: a model's name, or the scripted player's label,
  // which says it is not a language model.
  const llm = $("node-llm");
  llm.hidden = !(st.llm && st.llm.provider);
  if (!llm.hidden) setText(llm, "answers: " + cut(st.llm.provider, 120));
  metrics.sample(st);
  audit.status(st);
}

// pollStatus samples /v1/status now and schedules the next sample; one
// poll runs at a time.
let statusBusy = false;
async function pollStatus() {
  clearTimeout(statusTimer);
  statusTimer = 0;
  if (statusBusy) return; // the poll in flight schedules the next
  statusBusy = true;
  try {
    onStatus(await json("/v1/status"));
  } catch (err) {
    if (err instanceof APIError && err.status === 401) return;
    setText($("node-ready"), "unreachable");
    $("node-ready").className = "pill bad";
  } finally {
    statusBusy = false;
  }
  if (token.get() && !statusTimer) statusTimer = setTimeout(pollStatus, STATUS_EVERY_MS);
}

function start() {
  onUnauthorized(() => {
    token.clear();
    showLogin("The node refused the token.");
  });
  $("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    $("login-submit").disabled = true;
    setText($("login-error"), "");
    try {
      await signIn(t);
      $("token").value = "";
    } catch (err) {
      setText($("login-error"), err instanceof APIError && err.status === 401 ? "Wrong token." : "Cannot reach the node: " + err.message);
    } finally {
      $("login-submit").disabled = false;
    }
  });
  $("logout").addEventListener("click", () => {
    token.clear();
    showLogin("");
  });
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => select(b.dataset.view, true));
  }
  // Back and Forward between views (and a fragment edited by hand).
  addEventListener("popstate", () => {
    if (!token.get() || $("tabs").hidden) return;
    const name = hashView();
    if (name === current && name === "chat") views.chat.show();
    else select(name);
  });
  for (const v of Object.values(views)) v.init();
  if (token.get()) signIn(token.get()).catch(() => showLogin(""));
  else showLogin("");
}

start();
