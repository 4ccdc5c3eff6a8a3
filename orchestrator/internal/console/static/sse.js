// A server-sent events reader over fetch: EventSource cannot send an
// Authorization header, so the stream of POST /v1/chat is read from the
// response body.

// readEvents calls onEvent(name, data) for each event of resp's body, in
// order, and returns when the stream ends (or throws when it is aborted).
// Comments (": keep-alive") are skipped; an event without a name is
// "message", as in EventSource.
export async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let name = "", data = [];
  const line = (l) => {
    if (l === "") {
      if (data.length) onEvent(name || "message", data.join("\n"));
      name = ""; data = [];
      return;
    }
    if (l.startsWith(":")) return;
    const i = l.indexOf(":");
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? "" : l.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      if (buf[nl] === "\r" && nl === buf.length - 1) break; // its \n may come next
      const l = buf.slice(0, nl);
      buf = buf.slice(nl + (buf[nl] === "\r" && buf[nl + 1] === "\n" ? 2 : 1));
      line(l);
    }
  }
  buf += decoder.decode();
  if (buf) line(buf);
  line("");
}
