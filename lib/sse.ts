// Server-sent events: one incremental parser and one writer for the whole gateway.
// The parser accepts LF, CRLF and CR line ends, events split anywhere across chunks,
// multi-line data and comment lines, as the WHATWG event-stream rules say.
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The `event:` field, if any. */
  event?: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  id?: string;
  retry?: number;
}

/** An event larger than this is refused (the stream is treated as broken), so memory stays bounded. */
export const MAX_EVENT_CHARS = 32 * 1024 * 1024;

export class SseEventTooLarge extends Error {
  constructor() {
    super(`an event larger than ${MAX_EVENT_CHARS} characters`);
  }
}

export class SseParser {
  /** Pieces of the line not yet ended; kept as pieces so a long line costs linear time. */
  private partial: string[] = [];
  private partialChars = 0;
  private dataChars = 0;
  private event: string | undefined;
  private data: string[] = [];
  private id: string | undefined;
  private retry: number | undefined;
  private sawField = false;
  private pendingCR = false;
  /** Keeps a character split across chunks for the next one (Node's decoder: a third of TextDecoder's time on small chunks). */
  private readonly decoder = new StringDecoder('utf8');

  /** Feed bytes; returns the events completed by them. Throws SseEventTooLarge past MAX_EVENT_CHARS. */
  push(chunk: Uint8Array | string): SseEvent[] {
    let s = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (this.pendingCR && s.length > 0) {
      // A CR ended the previous chunk: a following LF belongs to it.
      if (s.startsWith('\n')) s = s.slice(1);
      this.pendingCR = false;
    }
    const out: SseEvent[] = [];
    const n = s.length;
    let start = 0;
    // Line ends found with native searches (a per-character loop was most of the parser's time);
    // a chunk without CR, as vendors send them, needs the LF search alone.
    let cr = s.indexOf('\r');
    for (;;) {
      let i = s.indexOf('\n', start);
      if (cr !== -1) {
        if (cr < start) cr = s.indexOf('\r', start);
        if (cr !== -1 && (i === -1 || cr < i)) i = cr;
      }
      if (i === -1) break;
      let line = s.slice(start, i);
      if (this.partial.length > 0) {
        this.partial.push(line);
        line = this.partial.join('');
        this.partial = [];
        this.partialChars = 0;
      }
      if (s.charCodeAt(i) === 13) {
        if (i + 1 < n) start = s.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
        else {
          this.pendingCR = true;
          start = i + 1;
        }
      } else start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    if (start < n) {
      this.partial.push(start === 0 ? s : s.slice(start));
      this.partialChars += n - start;
      if (this.partialChars + this.dataChars > MAX_EVENT_CHARS) throw new SseEventTooLarge();
    }
    return out;
  }

  /** End of input: an unterminated final event is not dispatched (WHATWG rules). */
  end(): SseEvent[] {
    const tail = this.decoder.end();
    const out = tail ? this.push(tail) : [];
    this.partial = [];
    this.partialChars = 0;
    this.reset();
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.charCodeAt(0) === 58 /* ':' */) return undefined; // comment
    const colon = line.indexOf(':');
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.data.push(value);
        this.dataChars += value.length;
        if (this.dataChars > MAX_EVENT_CHARS) throw new SseEventTooLarge();
        this.sawField = true;
        break;
      case 'event':
        this.event = value;
        this.sawField = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        this.sawField = true;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        this.sawField = true;
        break;
      default:
        break; // unknown fields are ignored
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    if (!this.sawField || this.data.length === 0) {
      this.reset();
      return undefined;
    }
    const ev: SseEvent = { data: this.data.join('\n') };
    if (this.event !== undefined) ev.event = this.event;
    if (this.id !== undefined) ev.id = this.id;
    if (this.retry !== undefined) ev.retry = this.retry;
    this.reset();
    return ev;
  }

  private reset(): void {
    this.event = undefined;
    this.data = [];
    this.dataChars = 0;
    this.id = undefined;
    this.retry = undefined;
    this.sawField = false;
  }
}

/** Serialize one event (LF line ends; data split on newlines into several data lines). */
export function formatEvent(ev: SseEvent): string {
  let out = '';
  if (ev.event !== undefined) out += `event: ${ev.event}\n`;
  if (ev.id !== undefined) out += `id: ${ev.id}\n`;
  if (ev.retry !== undefined) out += `retry: ${ev.retry}\n`;
  const data = ev.data;
  if (data.indexOf('\n') === -1 && data.indexOf('\r') === -1) out += `data: ${data}\n`;
  else for (const l of data.split(/\r\n|\r|\n/)) out += `data: ${l}\n`;
  return out + '\n';
}

/** A data-only event from a JSON value. */
export const jsonEvent = (value: unknown, event?: string): SseEvent =>
  event === undefined ? { data: JSON.stringify(value) } : { event, data: JSON.stringify(value) };
