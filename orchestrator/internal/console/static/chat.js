// Chat: the node's stored conversations, and a chat streamed from
// POST /v1/chat ("stream": true) read with fetch, each LLM turn and tool
// call shown as it happens. Cancel aborts the fetch; the node cancels the
// chat when its client goes away. The open conversation is in the
// fragment (#chat/ID), so that a reload shows it again.
//
// The list follows the node while the chat is shown: a long poll of the
// hot tier (/v1/logs?kind=message) answers when any chat stores a message
// (this tab's, another tab's, `evoclaw chat`'s), and the list is read
// again; at most one poll and one read a second. While the node cannot be
// reached (stopped, restarting) the list says so and the poll tries again
// after 1 s, doubling up to 15 s; once the node answers, the list is read
// again.
import { $, el, setText, clear, ago, cut, shown } from "./dom.js";
import { call, json, APIError } from "./api.js";
import { readEvents } from "./sse.js";

const PAGE = 30;
const MAX_PAGE = 200; // the most GET /v1/conversations answers at once
const WATCH_WAIT = "25s";
const WATCH_EVERY_MS = 1000; // at most one poll (and one list read) a second
const RETRY_MIN_MS = 1000, RETRY_MAX_MS = 15000;
let watchCtl = null; // AbortController of the list's long poll; null when stopped
let listSeq = 0; // the latest list read: an older one that ends later is dropped
const MAX_OUTPUT = 64 * 1024; // streamed output kept per tool call, in characters
let convId = "";
let cursor = "";
let running = null; // {controller, rows: Map(call_id -> row), ticker}

// An id as the node makes and takes them (wire.ValidateAgentID): anything
// else in a fragment, which a link can write, opens nothing.
const CONV_ID = /^[A-Za-z0-9_-]{1,128}$/;

// hashConv is the conversation the fragment names, "" when none.
function hashConv() {
  const m = /^#chat\/(.*)$/.exec(location.hash);
  return m && CONV_ID.test(m[1]) ? m[1] : "";
}

// setHash puts the open conversation in the fragment, while the chat is
// the view shown; it adds no history entry.
function setHash() {
  if (!/^#chat(\/|$)/.test(location.hash)) return;
  history.replaceState(null, "", "#chat" + (convId ? "/" + convId : ""));
}

export function init() {
  $("chat-new").addEventListener("click", () => open(""));
  $("chat-more").addEventListener("click", () => loadList(true));
  $("chat-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    send();
  });
  $("chat-text").addEventListener("keydown", (ev) => {
    // Enter sends, Shift+Enter makes a new line.
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  $("chat-cancel").addEventListener("click", () => running && running.controller.abort());
}

export function show() {
  loadList(false);
  watch();
  const id = hashConv();
  if (id && id !== convId && !running) open(id);
  else setHash();
}

export function hide() {
  if (watchCtl) watchCtl.abort();
  watchCtl = null;
}

// pause waits ms, or less when signal aborts.
function pause(ms, signal) {
  return new Promise((res) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      res();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

// unreachable says why the node cannot be read, "" when it can.
function unreachable(why) {
  const st = $("chat-list-state");
  st.hidden = !why;
  setText(st, why);
}

// why words an error of reading the node: fetch throws a TypeError when
// no answer comes at all ("Failed to fetch").
function why(err, retryMs) {
  const again = `trying again in ${Math.round(retryMs / 1000)} s`;
  if (err instanceof TypeError) return `The node is unreachable (${err.message}); ${again}. The list updates when it answers.`;
  return `Cannot follow the node's conversations: ${err.message}; ${again}.`;
}

// watch long-polls the node for stored messages and reads the list again
// when one comes; it runs until hide.
async function watch() {
  if (watchCtl) return;
  const ctl = new AbortController();
  watchCtl = ctl;
  let head = null; // the hot tier's newest record seen; null: ask afresh
  let retry = RETRY_MIN_MS;
  let down = false;
  while (watchCtl === ctl) {
    const started = performance.now();
    const q = head === null ? "kind=message&limit=1" : `kind=message&limit=1&after=${head}&wait=${WATCH_WAIT}`;
    try {
      const page = await json("/v1/logs?" + q, { signal: ctl.signal });
      // Back from an outage, the list may be stale: read it again.
      const stale = head === null ? down : page.entries.length > 0;
      head = page.head;
      retry = RETRY_MIN_MS;
      if (down) {
        down = false;
        unreachable("");
      }
      if (stale) await loadList(false);
      await pause(WATCH_EVERY_MS - (performance.now() - started), ctl.signal);
    } catch (err) {
      if (ctl.signal.aborted || (err instanceof APIError && err.status === 401)) return;
      // A node started again on another data directory numbers its
      // records afresh: ask for the head again.
      head = null;
      down = true;
      unreachable(why(err, retry));
      await pause(retry, ctl.signal);
      retry = Math.min(retry * 2, RETRY_MAX_MS);
    }
  }
}

// loadList reads the list again (as many conversations as it shows), or
// with more, the page after it. A node it cannot reach leaves the list as
// it was: watch says so and reads it again when the node answers.
async function loadList(more) {
  const list = $("chat-list");
  const seq = ++listSeq;
  try {
    const n = Math.min(Math.max(PAGE, list.querySelectorAll("button.conv").length), MAX_PAGE);
    const q = `/v1/conversations?limit=${more ? PAGE : n}` + (more && cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
    const page = await json(q);
    if (seq !== listSeq) return; // a later read shows the list
    // Read again, the list stays where the person was in it.
    const top = list.scrollTop;
    const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.dataset.conv : null;
    if (!more) clear(list);
    for (const c of page.conversations) {
      const b = el("button", { type: "button", class: "conv", "data-conv": c.id, "aria-current": c.id === convId ? "true" : "false",
        onclick: () => open(c.id) },
        el("span", { class: "conv-id", text: c.id }),
        el("span", { class: "muted", text: `${c.message_count} message${c.message_count === 1 ? "" : "s"} · ${ago(c.last_time)}` }));
      list.append(el("li", {}, b));
    }
    if (!list.firstChild) list.append(el("li", { class: "muted", text: "No conversation yet." }));
    cursor = page.next_cursor || "";
    $("chat-more").hidden = !cursor;
    list.scrollTop = top;
    if (focused) for (const b of list.querySelectorAll("button.conv")) if (b.dataset.conv === focused) b.focus();
  } catch (err) {
    if (seq !== listSeq || err instanceof TypeError) return;
    clear(list);
    list.append(el("li", { class: "error", text: "Cannot list conversations: " + err.message }));
  }
}

function markCurrent() {
  for (const b of document.querySelectorAll("#chat-list button.conv")) {
    b.setAttribute("aria-current", b.dataset.conv === convId ? "true" : "false");
  }
}

// leaveRunning asks the person whether to cancel the chat running in the
// conversation shown, which opening another would do (the page shows one
// conversation, and follows one chat); true when none runs or they agree.
function leaveRunning() {
  if (!running) return true;
  if (!confirm("A chat is still running in this conversation. Opening another one cancels it: the node stops its model and tool calls. Cancel the chat?")) return false;
  running.left = true; // what it still says belongs to the conversation left
  running.controller.abort();
  return true;
}

async function open(id) {
  if (!leaveRunning()) return;
  convId = id;
  setText($("chat-title"), id || "New conversation");
  setHash();
  markCurrent();
  const log = $("chat-log");
  clear(log);
  $("chat-text").focus();
  if (!id) return;
  try {
    const page = await json(`/v1/conversations/${encodeURIComponent(id)}/messages?limit=100`);
    if (page.more) log.append(el("p", { class: "muted", text: "Older messages are not shown (evoclaw audit report conversation " + id + ")." }));
    for (const m of page.messages) log.append(messageNode(m));
    log.scrollTop = log.scrollHeight;
  } catch (err) {
    log.append(el("p", { class: "error", text: "Cannot load the conversation: " + err.message }));
  }
}

// messageNode renders one stored message.
function messageNode(m) {
  switch (m.role) {
    case "user":
      return el("div", { class: "msg user" }, el("span", { class: "who", text: "you" }), el("p", { text: m.content }));
    case "assistant": {
      const d = el("div", { class: "msg assistant" }, el("span", { class: "who", text: "evoclaw" }));
      if (m.content) d.append(el("p", { text: m.content }));
      for (const c of m.tool_calls || []) d.append(el("p", { class: "muted", text: "→ " + c.name + " " + cut(c.arguments, 200) }));
      return d;
    }
    case "tool":
      return el("details", { class: "msg tool" + (m.is_error ? " failed" : "") },
        el("summary", { text: (m.is_error ? "✗ " : "✓ ") + (m.name || "tool") }),
        el("pre", { text: m.content }));
  }
  return el("div", { class: "msg muted" }, el("span", { class: "who", text: m.role }), el("p", { text: m.content }));
}

function setRunning(on) {
  $("chat-send").disabled = on;
  $("chat-cancel").disabled = !on;
}

async function send() {
  const text = $("chat-text").value.trim();
  if (!text || running) return;
  $("chat-text").value = "";
  const log = $("chat-log");
  log.append(el("div", { class: "msg user" }, el("span", { class: "who", text: "you" }), el("p", { text })));
  const steps = el("ol", { class: "steps", "aria-label": "progress" });
  log.append(steps);
  const r = { controller: new AbortController(), rows: new Map(), steps, llm: null };
  r.ticker = setInterval(() => tick(r), 250);
  running = r;
  setRunning(true);
  const body = { text, stream: true };
  if (convId) body.conversation_id = convId;
  let ended = false; // the answer or the error came
  let canceled = false;
  try {
    const resp = await call("/v1/chat", { method: "POST", body, signal: r.controller.signal, headers: { Accept: "text/event-stream" } });
    await readEvents(resp, (name, data) => {
      if (name === "answer" || name === "error") ended = true;
      onEvent(r, name, JSON.parse(data));
    });
    if (!ended) throw new Error("the node ended the chat without its answer (it may have stopped or restarted)");
  } catch (err) {
    canceled = err.name === "AbortError";
    // fetch throws a TypeError when the connection breaks
    const why = err instanceof TypeError ? "the connection to the node broke (" + err.message + "); it may have stopped" : err.message;
    // Left for another conversation, the log shows that one now.
    if (!r.left) log.append(el("div", { class: "msg error" + (canceled ? " canceled" : "") },
      el("p", { text: canceled ? "Canceled: the node stops this chat's model and tool calls." : "Chat failed: " + why })));
  } finally {
    // A call still shown running when the chat is over did not finish:
    // say so, rather than a clock stopped at "running".
    for (const row of r.rows.values()) if (!row.ended) finishRow(row, canceled ? "canceled" : "not finished", "", null);
    // A question still waiting for its reply waits no more.
    for (const q of r.steps.querySelectorAll(".step.question")) {
      if (!waitingQuestions.has(q.dataset.question)) continue;
      q.done();
      q.querySelector("form").hidden = true;
      setText(q.querySelector(".state"), "Not answered: the chat is over.");
    }
    clearInterval(r.ticker);
    running = null;
    setRunning(false);
    log.scrollTop = log.scrollHeight;
    loadList(false);
  }
}

function onEvent(r, name, d) {
  const log = $("chat-log");
  switch (name) {
    case "conversation":
      convId = d.conversation_id;
      setText($("chat-title"), convId);
      setHash();
      break;
    case "progress":
      progress(r, d);
      break;
    case "answer": {
      const m = el("div", { class: "msg assistant answer" }, el("span", { class: "who", text: "evoclaw" }), el("p", { text: d.text }));
      if (d.limit) m.append(el("p", { class: "muted", text: "tool use stopped early: " + d.limit }));
      log.append(m);
      break;
    }
    case "error":
      log.append(el("div", { class: "msg error" },
        el("p", { text: `${d.error.type} (${d.status}): ${d.error.message}` })));
      break;
  }
  log.scrollTop = log.scrollHeight;
}

function progress(r, p) {
  switch (p.kind) {
    case "llm_start":
      r.llm = el("li", { class: "step llm", text: `asking the model (turn ${p.iteration + 1})…` });
      r.steps.append(r.llm);
      break;
    case "llm_end":
      if (!r.llm) break;
      if (p.status === "error") {
        setText(r.llm, `the model failed after ${p.elapsed_ms || 0} ms: ${p.error || p.error_type || "error"}`);
        r.llm.classList.add("failed");
      } else {
        setText(r.llm, `model answered in ${p.elapsed_ms || 0} ms`);
        // What the model says it is about to do, beside its tool calls.
        if (p.text) r.steps.append(el("li", { class: "step said", text: p.text }));
      }
      break;
    case "tool_start": {
      const row = {
        start: performance.now(), ended: false,
        status: el("span", { class: "pill run", text: "running" }),
        elapsed: el("span", { class: "elapsed", text: "0.0 s" }),
        output: el("pre", { class: "output", hidden: true }),
        result: el("p", { class: "result" }),
      };
      row.node = el("li", { class: "step tool", "data-call": p.call_id },
        el("div", { class: "row" }, row.status, el("strong", { text: p.agent || "node" }), el("span", { text: p.tool }), row.elapsed),
        p.args ? el("p", { class: "muted args", text: p.args }) : null,
        row.output, row.result);
      r.rows.set(p.call_id, row);
      r.steps.append(row.node);
      break;
    }
    case "tool_output": {
      const row = r.rows.get(p.call_id);
      if (!row) break;
      approvalDecided(row);
      row.output.hidden = false;
      if (row.output.textContent.length < MAX_OUTPUT) row.output.append(document.createTextNode(shown(p.output)));
      row.output.scrollTop = row.output.scrollHeight;
      break;
    }
    case "tool_end": {
      const row = r.rows.get(p.call_id);
      if (row) finishRow(row, p.status, p.error_type ? `${p.error_type}: ${p.error || ""}` : p.result || "", p.elapsed_ms || 0);
      break;
    }
    case "approval_wait": {
      // The call waits for a person: say so on its row, or the chat looks
      // hung until the approval's timeout.
      const row = r.rows.get(p.call_id);
      const text = `waiting for approval ${p.approval_id}` + (p.error ? ` (${p.error})` : "") +
        `: evoclaw approvals approve ${p.approval_id}, or deny it`;
      if (row) {
        row.approval = true;
        setText(row.status, "approval");
        row.status.className = "pill run";
        setText(row.result, text);
        approvalArgs(row, p.approval_id);
      } else {
        r.steps.append(el("li", { class: "step muted", text }));
      }
      break;
    }
    case "question":
      r.steps.append(questionNode(p));
      break;
    case "dropped":
      r.steps.append(el("li", { class: "step muted", text: `the node dropped ${p.dropped_output_bytes} bytes of output and ${p.dropped_events} events: this page read too slowly` }));
      break;
  }
}

// typingElsewhere reports whether the person is typing in a text field
// (one that holds more than white space, or a list they are picking
// from): a question must not take the keyboard from them, or the rest of
// their words land in its reply box.
function typingElsewhere() {
  const a = document.activeElement;
  if (!a || a === document.body || a.disabled) return false;
  if (a.matches("select")) return true;
  if (a.isContentEditable) return a.textContent.trim() !== "";
  return a.matches("textarea, input:not([type]), input[type=text], input[type=search], input[type=password]") && a.value.trim() !== "";
}

// Questions waiting for the person's reply mark the page's title and the
// Chat tab, so that one asked while they look elsewhere (another view,
// another browser tab, their message half typed) is not missed.
const waitingQuestions = new Set();
let plainTitle = "";
function markQuestions() {
  if (!plainTitle) plainTitle = document.title;
  const n = waitingQuestions.size;
  document.title = n ? `(${n} question${n === 1 ? "" : "s"} waiting) ${plainTitle}` : plainTitle;
  const tab = document.querySelector('#tabs [data-view="chat"]');
  if (!tab) return;
  if (n) {
    tab.dataset.question = "waiting";
    tab.title = "The model asks you a question: reply in the chat";
  } else {
    delete tab.dataset.question;
    tab.removeAttribute("title");
  }
}

// questionNode shows the model's question to the person with a reply
// form; the reply goes to POST /v1/chat/questions/{id} and the chat's
// loop resumes with it. A question nobody answers times out on the node.
// It takes the keyboard only from a person who is not typing elsewhere;
// once its reply is taken the message box has the keyboard back.
function questionNode(p) {
  const input = el("input", { type: "text", class: "reply", "aria-label": "your reply", maxlength: 4096, autocomplete: "off" });
  const send = el("button", { type: "submit", text: "Reply" });
  const state = el("p", { class: "muted state" });
  const form = el("form", { class: "question-form" }, input, send);
  const node = el("li", { class: "step question", "data-question": p.question_id },
    el("p", { class: "asked" }, el("strong", { text: "The model asks: " }), p.question || ""), form, state);
  const done = () => {
    waitingQuestions.delete(p.question_id);
    markQuestions();
  };
  node.done = done; // the chat ended: nobody can reply any more
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const answer = input.value.trim();
    if (!answer) return;
    const hadKeyboard = document.activeElement === input || document.activeElement === send;
    input.disabled = send.disabled = true;
    try {
      await call(`/v1/chat/questions/${encodeURIComponent(p.question_id)}`, { method: "POST", body: { answer } });
      form.hidden = true;
      setText(state, "You replied: " + answer);
      done();
      // Still on the reply field (hidden now, and the browser may not
      // have moved the focus off it yet) or on nothing: not elsewhere.
      const a = document.activeElement;
      if (hadKeyboard && (!a || a === document.body || form.contains(a))) $("chat-text").focus();
    } catch (err) {
      input.disabled = send.disabled = false;
      setText(state, "Reply not taken: " + err.message);
    }
  });
  waitingQuestions.add(p.question_id);
  markQuestions();
  setTimeout(() => {
    node.scrollIntoView({ block: "nearest" });
    if (!typingElsewhere()) input.focus({ preventScroll: true });
  }, 0);
  return node;
}

// approvalArgs adds to the notice of a call that waits for approval id
// its arguments, whole as the node keeps them with the approval (64 KiB):
// the call's progress carries 200 bytes of them, and a model can put what
// a person would deny after those. Whoever decides reads all of them.
async function approvalArgs(row, id) {
  let line;
  try {
    const a = await json(`/v1/approvals/${encodeURIComponent(id)}`);
    line = "arguments: " + (a.params || "{}");
  } catch (err) {
    line = `its arguments could not be read (${err.message}): evoclaw approvals list shows them`;
  }
  // Decided meanwhile: the notice is gone, and so is the need.
  if (row.approval) row.result.append(document.createTextNode(shown("\n" + line)));
}

// approvalDecided takes the notice of a call that waited for approval off
// its row once the call runs or ends: it was decided.
function approvalDecided(row) {
  if (!row.approval) return;
  row.approval = false;
  setText(row.result, "");
  setText(row.status, "running");
  row.status.className = "pill run";
}

function finishRow(row, status, text, ms) {
  approvalDecided(row);
  row.ended = true;
  setText(row.status, status === "success" ? "ok" : status);
  row.status.className = "pill " + (status === "success" ? "ok" : "bad");
  if (ms !== null && ms !== undefined) setText(row.elapsed, (ms / 1000).toFixed(1) + " s");
  // A result that streamed is already on screen: only a failure adds to it.
  if (row.output.hidden || status !== "success") setText(row.result, text);
}

function tick(r) {
  const now = performance.now();
  for (const row of r.rows.values()) {
    if (!row.ended) setText(row.elapsed, ((now - row.start) / 1000).toFixed(1) + " s");
  }
}
