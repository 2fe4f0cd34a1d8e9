// Recorded vendor traffic (test/fixtures/replay, see PROVENANCE.md and index.json) replayed through
// a real gateway: the recordings, an upstream that answers with one of them byte for byte, a gateway
// whose offers point at that upstream, and reference readers that take an answer of either format
// (whole or streamed) apart into what the replay tests compare.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import type { Test } from 'tap';
import type { AddressInfo } from 'node:net';
import type { WireFormat } from '../../lib/config-types.js';
import type { Usage } from '../../lib/context.js';
import type { HistoryRow } from '../../lib/store/types.js';
import { SseParser, type SseEvent } from '../../lib/sse.js';
import { startGateway, type TestGateway } from './gateway.js';

const DIR = new URL('../fixtures/replay/', import.meta.url);

export interface Recording {
  name: string;
  /** The vendor's wire format. */
  format: WireFormat;
  stream: boolean;
  status: number;
  contentType: string;
  /** The response body exactly as the vendor sent it. */
  body: Buffer;
  /** The request body recorded with it. */
  request: Record<string, any>;
  features: string;
  /** File names in the fixtures folder. */
  bodyFile: string;
  requestFile: string;
}

export function loadRecordings(): Recording[] {
  const index: any[] = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8'));
  return index.map((r) => ({
    name: r.name,
    format: r.format,
    stream: r.stream,
    status: r.status,
    contentType: r.content_type,
    body: readFileSync(new URL(r.body, DIR)),
    request: JSON.parse(readFileSync(new URL(r.request, DIR), 'utf8')),
    features: r.features,
    bodyFile: r.body,
    requestFile: r.request,
  }));
}

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A real HTTP upstream on 127.0.0.1 that answers every request with the chosen recording. */
export interface ReplayUpstream {
  url: string;
  /** Requests received, oldest first. */
  received: Received[];
  /** Answer the next requests with this recording (status, content type and body as recorded). */
  serve(r: Recording): void;
  close(): Promise<void>;
}

export async function startReplayUpstream(): Promise<ReplayUpstream> {
  let current: Recording | undefined;
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      if (!current) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"the test chose no recording"}}');
        return;
      }
      // Streams go out chunked, as vendors send them; whole bodies with their length.
      res.writeHead(current.status, current.stream ? { 'content-type': current.contentType } : { 'content-type': current.contentType, 'content-length': current.body.length });
      res.end(current.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    serve(r) {
      current = r;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The model a client names to reach the replay upstream in each wire format. */
export const REPLAY_MODEL: Record<WireFormat, string> = { messages: 'replay/messages', chat: 'replay/chat' };

/** Both offers' prices (USD per million tokens), every token class at a price of its own. */
const PRICE = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6 };
/** The same in nano-USD per token. */
const NANO_PER_TOKEN = { input: 3000, output: 15000, cacheRead: 300, cacheWrite: 3750, cacheWrite1h: 6000 };

/** What a usage costs at the replay offers' prices (nano-USD), computed here, not by the gateway. */
function replayCost(u: Usage): number {
  return (
    u.input * NANO_PER_TOKEN.input +
    u.output * NANO_PER_TOKEN.output +
    u.cacheRead * NANO_PER_TOKEN.cacheRead +
    (u.cacheWrite - u.cacheWrite1h) * NANO_PER_TOKEN.cacheWrite +
    u.cacheWrite1h * NANO_PER_TOKEN.cacheWrite1h
  );
}

/** Provider keys the replay upstream is called with: they must never reach a client. */
export const REPLAY_PROVIDER_KEYS = { messages: 'sk-ant-api03-replay-provider-key-0123456789', chat: 'sk-proj-replay-provider-key-0123456789' };

/** A test gateway with one model per wire format, each served only by the replay upstream. */
export function startReplayGateway(upstream: ReplayUpstream): Promise<TestGateway> {
  return startGateway({
    configure(cfg) {
      // Recordings that end in an error event count as offer failures: they must not open the breaker.
      cfg.breaker = { failure_threshold: 1000, cooldown_ms: 1000 };
      cfg.providers = [
        { id: 'replay-messages', format: 'messages', base_url: upstream.url, api_key: REPLAY_PROVIDER_KEYS.messages },
        { id: 'replay-chat', format: 'chat', base_url: `${upstream.url}/v1`, api_key: REPLAY_PROVIDER_KEYS.chat },
      ];
      cfg.models = [
        { id: REPLAY_MODEL.messages, context_window: 1_000_000, max_output_tokens: 64_000 },
        { id: REPLAY_MODEL.chat, context_window: 1_000_000, max_output_tokens: 16_384 },
      ];
      cfg.offers = [
        { listing: `${REPLAY_MODEL.messages}@replay`, model: REPLAY_MODEL.messages, provider: 'replay-messages', upstream_model: 'replay-messages-upstream', price: PRICE },
        { listing: `${REPLAY_MODEL.chat}@replay`, model: REPLAY_MODEL.chat, provider: 'replay-chat', upstream_model: 'replay-chat-upstream', price: PRICE },
      ];
    },
  });
}

/** The replay upstream and its gateway, started before a test file's tests and closed after them. */
export function useReplay(t: Test): { readonly up: ReplayUpstream; readonly gw: TestGateway } {
  const running = {} as { up: ReplayUpstream; gw: TestGateway };
  t.before(async () => {
    running.up = await startReplayUpstream();
    running.gw = await startReplayGateway(running.up);
  });
  t.teardown(async () => {
    await running.gw.close();
    await running.up.close();
  });
  return running;
}

/** The history row once the request's onDone hooks ran (the gateway finishes after the client). */
async function historyRow(gw: TestGateway, requestId: string): Promise<HistoryRow> {
  await gw.gateway.requestFinished(requestId);
  const row = await gw.store.history.get(requestId);
  if (!row) throw new Error(`no history row for ${requestId}`);
  return row;
}

export const balanceOf = async (gw: TestGateway): Promise<number> => (await gw.store.ledger.balance(gw.accountId)).balance;

/**
 * The request that replayed `r` was charged as it must be: exactly the recorded usage, cache tokens
 * included; for a stream that ended in an error event, what was measured so far (the usage reported
 * before the error, else the input estimate and the text streamed), with the vendor's message as the
 * request's error. The cost is recomputed here from the prices; the balance moved by exactly it.
 */
export async function checkCharge(t: Test, gw: TestGateway, r: Recording, requestId: string, balanceBefore: number): Promise<void> {
  const recorded = recordedAnswer(r);
  const row = await historyRow(gw, requestId);
  const spent = balanceBefore - (await balanceOf(gw));
  t.equal(row.listing, `${REPLAY_MODEL[r.format]}@replay`, 'served by the replay offer');
  if (recorded.error) {
    t.equal(row.status, 'error');
    t.equal(row.error, recorded.error.error.message, "the vendor's message is the request's error");
    if (recorded.usage) {
      const partial = usageOf(r.format, recorded.usage);
      t.same({ ...row.usage, output: partial.output }, partial, 'the usage reported before the error');
      t.ok(row.usage.output >= partial.output, `output: at least the reported ${partial.output} (${row.usage.output}, from the text streamed)`);
    } else {
      t.ok(row.usage.input > 0 && row.usage.output > 0, `no usage reported: input estimated (${row.usage.input}), output from the text streamed (${row.usage.output})`);
    }
    t.ok(row.costNano > 0, 'charged for what was produced');
  } else {
    t.equal(row.status, 'ok');
    t.same(row.usage, usageOf(r.format, recorded.usage), 'charged exactly the recorded usage, cache tokens included');
  }
  t.equal(row.costNano, replayCost(row.usage), 'each token class at its own price');
  t.equal(spent, row.costNano, 'the balance moved by exactly the charge');
}

// ---------------------------------------------------------------- reference readers

export function parseSse(text: string | Buffer): SseEvent[] {
  const p = new SseParser();
  return [...p.push(text), ...p.end()];
}

/** An answer of either format, taken apart. */
export interface Answer {
  text: string;
  /** The chat format's refusal text (the messages format has none: it becomes text there). */
  refusal: string;
  thinking: string;
  /** Thinking signatures, in order: they must survive unchanged. */
  signatures: string[];
  toolCalls: { id: string; name: string; input: unknown }[];
  /** stop_reason or finish_reason, in the answer's own format. */
  stop: string | null;
  /** The final usage, in the answer's own format's fields (undefined: none reported). */
  usage: Record<string, any> | undefined;
  /** The error a stream ended with (its parsed data), if any. */
  error?: any;
}

const emptyAnswer = (): Answer => ({ text: '', refusal: '', thinking: '', signatures: [], toolCalls: [], stop: null, usage: undefined });

/** A tool call's arguments as a value: "" (a call without arguments) is {}. */
const argsOf = (s: string): unknown => (s === '' ? {} : JSON.parse(s));

export function messagesAnswer(msg: any): Answer {
  const a = emptyAnswer();
  for (const b of msg.content) {
    if (b.type === 'text') a.text += b.text;
    else if (b.type === 'thinking') {
      a.thinking += b.thinking;
      a.signatures.push(b.signature);
    } else if (b.type === 'tool_use') a.toolCalls.push({ id: b.id, name: b.name, input: b.input });
  }
  a.stop = msg.stop_reason;
  a.usage = msg.usage;
  return a;
}

/** Messages-format events (parsed data); usage counters are cumulative, the later value wins. */
export function messagesStreamAnswer(events: any[]): Answer {
  const a = emptyAnswer();
  const blocks: any[] = [];
  let usage: Record<string, any> | undefined;
  const merge = (u: any) => {
    if (u) usage = { ...usage, ...Object.fromEntries(Object.entries(u).filter(([, v]) => v !== null && v !== undefined)) };
  };
  for (const e of events) {
    switch (e.type) {
      case 'message_start':
        merge(e.message.usage);
        break;
      case 'content_block_start':
        blocks[e.index] = { ...e.content_block, json: '' };
        break;
      case 'content_block_delta': {
        const b = blocks[e.index];
        const d = e.delta;
        if (d.type === 'text_delta') b.text += d.text;
        else if (d.type === 'thinking_delta') b.thinking += d.thinking;
        else if (d.type === 'signature_delta') b.signature = d.signature;
        else if (d.type === 'input_json_delta') b.json += d.partial_json;
        break;
      }
      case 'message_delta':
        a.stop = e.delta.stop_reason;
        merge(e.usage);
        break;
      case 'error':
        a.error = e;
        break;
    }
  }
  for (const b of blocks) {
    if (b.type === 'text') a.text += b.text;
    else if (b.type === 'thinking') {
      a.thinking += b.thinking;
      a.signatures.push(b.signature);
    } else if (b.type === 'tool_use') a.toolCalls.push({ id: b.id, name: b.name, input: argsOf(b.json) });
  }
  a.usage = usage;
  return a;
}

export function chatAnswer(completion: any): Answer {
  const a = emptyAnswer();
  const choice = completion.choices[0];
  const m = choice.message;
  a.text = m.content ?? '';
  a.refusal = m.refusal ?? '';
  a.thinking = m.reasoning_content ?? '';
  for (const r of m.reasoning_details ?? []) if (r.type === 'thinking') a.signatures.push(r.signature);
  for (const tc of m.tool_calls ?? []) a.toolCalls.push({ id: tc.id, name: tc.function.name, input: argsOf(tc.function.arguments) });
  a.stop = choice.finish_reason;
  a.usage = completion.usage;
  return a;
}

/** Chat chunks (parsed data, [DONE] left out). */
export function chatStreamAnswer(chunks: any[]): Answer {
  const a = emptyAnswer();
  const calls: { id: string; name: string; args: string }[] = [];
  for (const c of chunks) {
    if (c.error) {
      a.error = c;
      continue;
    }
    if (c.usage) a.usage = c.usage;
    const choice = c.choices?.[0];
    if (!choice) continue;
    const d = choice.delta ?? {};
    a.text += d.content ?? '';
    a.refusal += d.refusal ?? '';
    a.thinking += d.reasoning_content ?? d.reasoning ?? '';
    for (const r of d.reasoning_details ?? []) if (r.type === 'thinking') a.signatures.push(r.signature);
    for (const tc of d.tool_calls ?? []) {
      const call = (calls[tc.index] ??= { id: '', name: '', args: '' });
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.name = tc.function.name;
      call.args += tc.function?.arguments ?? '';
    }
    if (choice.finish_reason) a.stop = choice.finish_reason;
  }
  a.toolCalls = calls.map((c) => ({ id: c.id, name: c.name, input: argsOf(c.args) }));
  return a;
}

/** A recording's own answer, read from its body. */
export function recordedAnswer(r: Recording): Answer {
  if (!r.stream) return r.format === 'messages' ? messagesAnswer(JSON.parse(r.body.toString('utf8'))) : chatAnswer(JSON.parse(r.body.toString('utf8')));
  const data = parseSse(r.body)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data));
  return r.format === 'messages' ? messagesStreamAnswer(data) : chatStreamAnswer(data);
}

/** Usage in either format's fields → the gateway's Usage (input excludes cache reads and writes). */
export function usageOf(format: WireFormat, u: any): Usage {
  if (format === 'messages') {
    return {
      input: u.input_tokens,
      output: u.output_tokens,
      cacheRead: u.cache_read_input_tokens ?? 0,
      cacheWrite: u.cache_creation_input_tokens ?? 0,
      cacheWrite1h: u.cache_creation?.ephemeral_1h_input_tokens ?? 0,
    };
  }
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  return { input: u.prompt_tokens - cached, output: u.completion_tokens, cacheRead: cached, cacheWrite: 0, cacheWrite1h: 0 };
}
