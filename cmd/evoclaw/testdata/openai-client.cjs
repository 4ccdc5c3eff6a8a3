// Drives a node's OpenAI-compatible API with the official openai npm client
// and prints one JSON object with what it saw; the Go test
// (openai_client_test.go) checks it. Environment: OPENAI_MODULE (the
// package's directory), EVOCLAW_BASE_URL (…/v1), EVOCLAW_TOKEN, MARKER (the
// file the hang tool creates when it starts), NOMODEL_BASE_URL and
// NOMODEL_TOKEN (a node with no [llm]).
'use strict';
const fs = require('fs');
const { OpenAI } = require(process.env.OPENAI_MODULE);

const base = process.env.EVOCLAW_BASE_URL;
// No retries: each status must be seen as the node sent it.
const client = new OpenAI({ baseURL: base, apiKey: process.env.EVOCLAW_TOKEN, maxRetries: 0, timeout: 60000 });
const user = (text) => ({ role: 'user', content: text });
const assistant = (text) => ({ role: 'assistant', content: text });

// errorOf runs fn and reports the status and error type it failed with.
async function errorOf(fn) {
  try {
    await fn();
    return { status: 200 };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
    return { status: e.status ?? null, type: (e.error && e.error.type) || e.type || null, message: e.message, cls: e.constructor.name,
      param: e.param ?? null, code: e.code ?? null };
  }
}

async function main() {
  const out = {};
  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);

  const done = await client.chat.completions.create({ model: 'evoclaw', messages: [user('count once')] });
  out.completion = { content: done.choices[0].message.content, finish: done.choices[0].finish_reason,
    usage: done.usage, conversation_id: done.conversation_id, object: done.object };

  const stream = await client.chat.completions.create({ model: 'evoclaw', messages: [user('count again')], stream: true,
    stream_options: { include_usage: true } });
  out.stream = { progress: [], content: '', finish: null, usage: null, role: null };
  for await (const chunk of stream) {
    if (chunk.evoclaw) out.stream.progress.push(chunk.evoclaw.kind + ':' + (chunk.evoclaw.tool || ''));
    if (chunk.usage) out.stream.usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) out.stream.role = c.delta.role;
    if (c.delta.content) out.stream.content += c.delta.content;
    if (c.finish_reason) out.stream.finish = c.finish_reason;
  }

  // Stop sequences and the sampling hints clients send: the seeded chat
  // gets the transcript's second turn, "count is (no result for c1)",
  // cut before " is".
  const seeded = [user('a'), assistant('1'), user('b')];
  const hints = { stop: [' is', 'never'], max_completion_tokens: 50, temperature: 0.5, top_p: 1, seed: 1, user: 'u',
    metadata: { k: 'v' }, store: false, presence_penalty: 0, frequency_penalty: 0 };
  const stopped = await client.chat.completions.create({ model: 'evoclaw', messages: seeded, ...hints });
  out.stop = { content: stopped.choices[0].message.content, finish: stopped.choices[0].finish_reason };
  const stoppedStream = client.chat.completions.stream({ model: 'evoclaw', messages: seeded, ...hints, stream_options: { include_usage: true } });
  const assembled = await stoppedStream.finalChatCompletion();
  out.stop.streamed = { content: assembled.choices[0].message.content, finish: assembled.choices[0].finish_reason, usage: assembled.usage };

  out.errors = {};
  const wrong = new OpenAI({ baseURL: base, apiKey: 'wrong-key-wrong-key', maxRetries: 0 });
  out.errors.auth = await errorOf(() => wrong.chat.completions.create({ model: 'evoclaw', messages: [user('x')] }));
  out.errors.model = await errorOf(() => client.chat.completions.create({ model: 'gpt-4o', messages: [user('x')] }));
  out.errors.temperature = await errorOf(() => client.chat.completions.create({ model: 'evoclaw', messages: [user('x')], temperature: 5 }));
  out.errors.stop = await errorOf(() => client.chat.completions.create({ model: 'evoclaw', messages: [user('x')], stop: 'abcdefghijklmnopq'.split('') }));
  out.errors.logit_bias = await errorOf(() => client.chat.completions.create({ model: 'evoclaw', messages: [user('x')], logit_bias: { 50256: -100 } }));
  out.errors.tools = await errorOf(() => client.chat.completions.create({ model: 'evoclaw', messages: [user('x')],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] }));
  // The scripted model has three turns: a seed with three answers asks for a fourth.
  out.errors.upstream = await errorOf(() => client.chat.completions.create({ model: 'evoclaw',
    messages: [user('a'), assistant('1'), user('b'), assistant('2'), user('c'), assistant('3'), user('d')] }));
  // Two answers in the seed: turn three calls the hang tool, past chat_timeout.
  out.errors.timeout = await errorOf(() => client.chat.completions.create({ model: 'evoclaw',
    messages: [user('a'), assistant('1'), user('b'), assistant('2'), user('hang')] }));
  // A streamed failure after the header (the hang tool has started, then
  // chat_timeout): the client throws from the stream. A failure before any
  // step answers with its status instead, as "upstream" does unstreamed.
  out.errors.streamed = await errorOf(async () => {
    const s = await client.chat.completions.create({ model: 'evoclaw', stream: true,
      messages: [user('a'), assistant('1'), user('b'), assistant('2'), user('hang')] });
    for await (const _ of s) { /* progress chunks, then the error event */ }
  });
  out.errors.streamed_at_once = await errorOf(async () => {
    const s = await client.chat.completions.create({ model: 'evoclaw', stream: true,
      messages: [user('a'), assistant('1'), user('b'), assistant('2'), user('c'), assistant('3'), user('d')] });
    for await (const _ of s) { /* nothing: the status comes first */ }
  });

  // A node with no model: the client's default retries (2) are on, and
  // a counting fetch tells whether it retried the 503.
  let attempts = 0;
  const counted = (url, init) => { attempts++; return fetch(url, init); };
  const nomodel = new OpenAI({ baseURL: process.env.NOMODEL_BASE_URL, apiKey: process.env.NOMODEL_TOKEN, fetch: counted, timeout: 60000 });
  out.errors.no_model = await errorOf(() => nomodel.chat.completions.create({ model: 'evoclaw', messages: [user('hi')] }));
  out.errors.no_model.attempts = attempts;
  attempts = 0;
  out.errors.no_model_streamed = await errorOf(async () => {
    const s = await nomodel.chat.completions.create({ model: 'evoclaw', stream: true, messages: [user('hi')] });
    for await (const _ of s) { /* nothing: the status comes first */ }
  });
  out.errors.no_model_streamed.attempts = attempts;

  // Busy: a named conversation whose chat hangs queues 16 more; one more is refused.
  const first = await client.chat.completions.create({ model: 'evoclaw', messages: [user('a'), assistant('1'), user('b')] });
  const conv = first.conversation_id;
  fs.rmSync(process.env.MARKER, { force: true });
  const named = (text) => client.chat.completions.create({ model: 'evoclaw', messages: [user(text)] },
    { headers: { 'X-Evoclaw-Conversation': conv } });
  const hanging = errorOf(() => named('hang'));
  for (let i = 0; i < 200 && !fs.existsSync(process.env.MARKER); i++) await new Promise((r) => setTimeout(r, 25));
  out.busy = { marker: fs.existsSync(process.env.MARKER) };
  const queued = await Promise.all(Array.from({ length: 17 }, (_, i) => errorOf(() => named('q' + i))));
  out.busy.statuses = queued.map((r) => r.status).concat([(await hanging).status]);
  out.busy.types = [...new Set(queued.filter((r) => r.status === 429).map((r) => r.type))];
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
