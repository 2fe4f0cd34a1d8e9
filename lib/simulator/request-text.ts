// The text a simulated model "reads": one walk over the request gives its size (input tokens),
// a hash of the prompt (which words the answer uses) and the directives written in it.
import type { WireFormat } from '../config-types.js';
import { dataUrlBytes, pdfPagesAtMost, pdfScanBudget, PDF_MEDIA_TYPE } from '../documents.js';
import { parseDirectives, type Directive } from './directives.js';

export interface RequestText {
  /** Characters (UTF-16 units) of all text: system, messages, tool calls and results, tool definitions JSON. */
  chars: number;
  /** FNV-1a of the prose (system and message text). */
  hash: number;
  /** Directives found in the last user turn's text, in order. */
  directives: Directive[];
}

/** Input tokens the simulator reports for a request: ceil(characters of all its text / 4). */
export function simulatedInputTokens(body: unknown, format: WireFormat): number {
  return Math.ceil(readRequestText(body, format).chars / 4);
}

/**
 * Directives come from the last user turn only: a directive shapes the answer it was written for,
 * so `tools=2` in a question does not make every later turn of an agent loop call tools again.
 * They are read from what the user wrote (text), not from tool results: a tool's output is data the
 * model reads (it may well echo the question, directive included), and a loop's later turns often
 * carry nothing but tool results. The system prompt does not carry them either: it is sent on every turn.
 */
export function readRequestText(body: unknown, format: WireFormat): RequestText {
  const out: RequestText = { chars: 0, hash: 0x811c9dc5, directives: [] };
  let reading = false;
  const prose = (text: unknown) => {
    if (typeof text !== 'string') return;
    out.chars += text.length;
    out.hash = fnv1a(text, out.hash);
    if (reading && text.includes('<<sim')) out.directives.push(...parseDirectives(text));
  };
  const results = (text: unknown) => {
    const was = reading;
    reading = false;
    prose(text);
    reading = was;
  };
  const json = (value: unknown) => {
    if (value !== undefined) out.chars += JSON.stringify(value).length;
  };
  const b = isObject(body) ? body : {};
  const messages = arrayOf(b.messages);
  const turn = lastUserTurn(messages);
  if (format === 'messages') {
    if (Array.isArray(b.system)) for (const block of b.system) prose(isObject(block) ? block.text : undefined);
    else prose(b.system);
    messages.forEach((m, i) => {
      reading = turn.has(i);
      messagesContent(isObject(m) ? m.content : undefined, prose, results, json);
    });
  } else {
    messages.forEach((m, i) => {
      if (!isObject(m)) return;
      reading = turn.has(i) && m.role === 'user';
      chatContent(m.content, prose);
      for (const call of arrayOf(m.tool_calls)) {
        if (isObject(call) && isObject(call.function) && typeof call.function.arguments === 'string') {
          out.chars += call.function.arguments.length;
        }
      }
    });
  }
  reading = false;
  json(b.tools);
  return out;
}

/**
 * Indexes of the last user turn's user messages: those after the last assistant message, a final
 * assistant message (a prefill) aside.
 */
function lastUserTurn(messages: unknown[]): Set<number> {
  const role = (i: number) => (isObject(messages[i]) ? messages[i].role : undefined);
  let end = messages.length;
  if (end > 0 && role(end - 1) === 'assistant') end--;
  const turn = new Set<number>();
  for (let i = end - 1; i >= 0 && role(i) !== 'assistant'; i--) if (role(i) === 'user') turn.add(i);
  return turn;
}

type Reader = (text: unknown) => void;

function messagesContent(content: unknown, prose: Reader, results: Reader, json: (v: unknown) => void): void {
  if (!Array.isArray(content)) return prose(content);
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block.type === 'text') prose(block.text);
    else if (block.type === 'document') documentText(block.source, results, json);
    else if (block.type === 'tool_result') messagesContent(block.content, results, results, json);
    else if (block.type === 'tool_use') json(block.input ?? {});
    // Images and earlier thinking cost no text tokens here (the vendor drops earlier thinking too).
  }
}

/** A document is data the model reads, like a tool result: its text counts, it carries no directives. */
function documentText(source: unknown, read: Reader, json: (v: unknown) => void): void {
  if (!isObject(source)) return;
  if (source.type === 'text') read(source.data);
  else if (source.type === 'content') messagesContent(source.content, read, read, json);
  else if (source.type === 'base64' && source.media_type === PDF_MEDIA_TYPE && typeof source.data === 'string') pdfText(Buffer.from(source.data, 'base64'), read);
}

/** A simulated PDF page reads as about what the vendor bills for one: 2,300 tokens, 4 characters each. */
const PDF_PAGE_TEXT = 'page'.repeat(2300);

function pdfText(pdf: Buffer, read: Reader): void {
  const pages = pdfPagesAtMost(pdf, pdfScanBudget()) ?? 1;
  for (let i = 0; i < pages; i++) read(PDF_PAGE_TEXT);
}

function chatContent(content: unknown, prose: Reader): void {
  if (!Array.isArray(content)) return prose(content);
  for (const part of content) {
    if (!isObject(part)) continue;
    if (part.type === 'text') prose(part.text);
    else if (part.type === 'file' && typeof part.file?.file_data === 'string' && part.file.file_data.startsWith(`data:${PDF_MEDIA_TYPE}`)) {
      const pdf = dataUrlBytes(part.file.file_data);
      if (pdf) pdfText(pdf, prose);
    }
  }
}

function fnv1a(text: string, h: number): number {
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const arrayOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
