// The plugin contract. Request hooks run in chain order; response and stream hooks in reverse
// (as in Envoy's filter chain): the plugin nearest the upstream sees the provider's own output first.
import type { RequestContext, Offer, Outcome } from './context.js';
import type { WireFormat } from './config-types.js';
import type { GatewayConfig } from './config-types.js';
import type { SseEvent } from './sse.js';
import { textDeltaOf, type TextDelta } from './text-delta.js';

/** What the proxy sends to one offer. Built fresh for each attempt. */
export interface UpstreamRequest {
  offer: Offer;
  /** The wire format of this upstream (the offer's provider format). */
  format: WireFormat;
  /** Path below the provider's base URL, e.g. "/v1/messages" or "/chat/completions". */
  path: string;
  /**
   * The JSON body to send; serialized once after all onAttempt hooks ran. Replace values rather than
   * change them in place: a same-format attempt sends the values still === the client's own as the
   * client's own text (upstream-payload.ts).
   */
  body: Record<string, any>;
  /** Extra upstream headers (credentials and the allowlist are added by the core). */
  headers: Record<string, string>;
}

/**
 * A whole answer already in its final text (a same-format answer: the upstream's own text with at
 * most its model renamed), so it is not serialized again.
 */
export class AnswerText {
  constructor(readonly text: string) {}
}

/**
 * One streamed event on its way to the client. `json` parses `data` at most once; assigning
 * `json` marks the event changed so the writer serializes it again. `[DONE]` has no json.
 */
export class StreamEvent {
  event?: string;
  /**
   * The upstream's event as it came, when it is its format's plain text delta (text-delta.ts):
   * hooks read this instead of `json`, so the event is never parsed. Gone once the event changes.
   */
  textDelta?: TextDelta;
  private raw: string | undefined;
  private parsed: any;
  private hasParsed = false;

  /** `format`: the upstream's, for an event as the upstream sent it (its text delta is then recognized). */
  constructor(ev: SseEvent | { event?: string; json: unknown }, format?: WireFormat) {
    this.event = ev.event;
    if ('data' in ev) {
      this.raw = ev.data;
      if (format) this.textDelta = textDeltaOf(format, ev.data);
    } else {
      this.parsed = ev.json;
      this.hasParsed = true;
    }
  }

  static of(json: unknown, event?: string): StreamEvent {
    return new StreamEvent({ event, json });
  }

  get data(): string {
    if (this.raw === undefined) this.raw = JSON.stringify(this.parsed);
    return this.raw;
  }

  set data(v: string) {
    this.raw = v;
    this.textDelta = undefined;
    this.hasParsed = false;
    this.parsed = undefined;
  }

  get isDone(): boolean {
    return this.raw === '[DONE]';
  }

  /** The parsed data; undefined for `[DONE]` or data that is not JSON. */
  get json(): any {
    if (!this.hasParsed) {
      this.hasParsed = true;
      if (this.raw !== '[DONE]') {
        try {
          this.parsed = JSON.parse(this.raw as string);
        } catch {
          this.parsed = undefined;
        }
      }
    }
    return this.parsed;
  }

  set json(v: any) {
    this.parsed = v;
    this.hasParsed = true;
    this.raw = undefined;
    this.textDelta = undefined;
  }
}

/** Per-attempt stream handler. Events arrive in the upstream's format as seen by this plugin. */
export interface StreamHook {
  /** Return the events to pass on (none, the same, or several). */
  onEvent(ev: StreamEvent): StreamEvent | StreamEvent[] | undefined | void;
  /** The upstream ended cleanly: last events to pass on. */
  onEnd?(): StreamEvent[] | undefined | void;
}

export interface Plugin {
  readonly name: string;
  /**
   * Before the body is read, in chain order: decide from the headers alone (who calls, how often).
   * Throw a GatewayError to refuse: the body is then never read and the connection is closed.
   */
  onHeaders?(ctx: RequestContext): void | Promise<void>;
  /**
   * Its onRequest works through the whole body (parsing, walking every part): for a large body it
   * then waits for a turn (lib/take-turns.ts), so large bodies do not hold the event loop back to back.
   */
  readonly bodyWork?: boolean;
  /** Request phase (the body is read), in chain order. Throw a GatewayError to stop the chain. */
  onRequest?(ctx: RequestContext): void | Promise<void>;
  /** Once per attempt, in chain order: shape the upstream request for this offer. */
  onAttempt?(ctx: RequestContext, up: UpstreamRequest): void;
  /**
   * A non-streamed upstream success body (parsed once from `text`, the upstream's own JSON), in
   * reverse order. Return a replacement body, or an AnswerText: the client then gets that text (and
   * the hooks after this one still read `body`). Read-only otherwise: a body changed in place is
   * not what the client gets once an earlier hook has answered with text. (`text` is absent only
   * where a hook is called on a body alone, as tests do.)
   */
  onResponseBody?(ctx: RequestContext, body: any, up: UpstreamRequest, text?: string): any;
  /** A streamed attempt begins: return a hook for its events (reverse order). */
  onStream?(ctx: RequestContext, up: UpstreamRequest): StreamHook | undefined;
  /** Exactly once per request, whatever happened. Errors here are logged, never sent. */
  onDone?(ctx: RequestContext, outcome: Outcome): void | Promise<void>;
  /** Release resources at shutdown. */
  close?(): void | Promise<void>;
}

/** Everything a plugin factory may need at start. Extended by later issues (store, clock). */
export interface PluginEnv {
  config: GatewayConfig;
  /** Offers resolved from the config, grouped by model id. */
  offersByModel: Map<string, Offer[]>;
  [key: string]: unknown;
}

export type PluginFactory = (env: PluginEnv) => Plugin;
