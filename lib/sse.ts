// Server-sent events: one incremental parser and one writer for the whole gateway.
// The parser accepts LF, CRLF and CR line ends, events split anywhere across chunks,
// multi-line data and comment lines, as the WHATWG event-stream rules say.

export interface SseEvent {
  /** The `event:` field, if any. */
  event?: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  id?: string;
  retry?: number;
}

export class SseParser {
  private buf = '';
  private event: string | undefined;
  private data: string[] = [];
  private id: string | undefined;
  private retry: number | undefined;
  private sawField = false;
  private pendingCR = false;
  private readonly decoder = new TextDecoder('utf-8');

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.pendingCR && text.length > 0) {
      // A CR ended the previous chunk: a following LF belongs to it.
      if (text.startsWith('\n')) text = text.slice(1);
      this.pendingCR = false;
    }
    const out: SseEvent[] = [];
    let s = this.buf + text;
    let start = 0;
    for (;;) {
      let i = start;
      const n = s.length;
      while (i < n) {
        const c = s.charCodeAt(i);
        if (c === 10 || c === 13) break;
        i++;
      }
      if (i >= n) break;
      const line = s.slice(start, i);
      if (s.charCodeAt(i) === 13) {
        if (i + 1 < n) {
          start = s.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
        } else {
          this.pendingCR = true;
          start = i + 1;
        }
      } else start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buf = s.slice(start);
    return out;
  }

  /** End of input: an unterminated final event is dispatched only if the stream said so (it is not, per spec). */
  end(): SseEvent[] {
    const tail = this.decoder.decode();
    const out = tail ? this.push(tail) : [];
    this.buf = '';
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
