// Input-token estimates before the upstream has counted: a real BPE tokenizer (gpt-tokenizer's
// r50k encoding: the smallest in memory, and it counts high) over every piece of text the request
// carries, scaled up, because the hold must be an upper bound and other vendors' tokenizers
// produce more tokens for the same text.
import { createHash } from 'node:crypto';
import { countTokens, setMergeCacheSize } from 'gpt-tokenizer/encoding/r50k_base';
import { LRUCache } from 'lru-cache';
import type { WireFormat } from './config-types.js';
import { TEXT_READING, TOOL_READING, TextCounts, fingerprint } from './text-counts.js';
import { dataUrlBytes, parseDataUrl, pdfPagesAtMost, pdfScanBudget, PDF_MEDIA_TYPE, TEXT_MEDIA_TYPE, type PdfScanBudget } from './documents.js';

/** Other tokenizers count up to ~25% more than o200k on the same text. */
const SAFETY = 1.25;
const PER_MESSAGE = 4;
/** A large image costs about this many tokens at most (1568 in the messages vendor's sizing rule). */
const PER_IMAGE = 1600;
/**
 * A PDF page costs its text plus an image of the page: the messages vendor documents 1,500 to 3,000
 * tokens a page (measured: 2,100 to 2,500 for text and table pages, 1,600 for a scan).
 */
export const PDF_PAGE_TOKENS = 3000;

interface Tally {
  text: string[];
  images: number;
  messages: number;
  pdfPages: number;
  /** Documents whose size the gateway cannot see (see InputEstimate). */
  unseen: number;
  pdfBudget: PdfScanBudget;
}

/** Structural keys (roles, types, ids, flags) are covered by the per-message overhead. */
const STRUCTURAL = new Set(['type', 'role', 'id', 'tool_use_id', 'tool_call_id', 'cache_control', 'signature']);

/** Every string in a value (tool inputs, arguments, reasoning…), structural keys left out. */
function walkText(value: unknown, t: Tally): void {
  if (typeof value === 'string') t.text.push(value);
  else if (Array.isArray(value)) for (const v of value) walkText(v, t);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (!STRUCTURAL.has(k)) walkText(v, t);
  }
}

/**
 * Message content (a string or parts/blocks, in either format). Images and documents are told by
 * their place as content blocks, not by a `type` anywhere (a tool's input may say "image").
 */
function walkContent(content: unknown, t: Tally): void {
  if (!Array.isArray(content)) return walkText(content, t);
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    switch (part.type) {
      case 'image':
      case 'image_url':
        t.images++; // base64 data is not text the model reads
        break;
      case 'document':
        walkDocument(part, t);
        break;
      case 'file':
        walkFile(part.file, t);
        break;
      default:
        for (const [k, v] of Object.entries(part)) {
          if (k === 'content') walkContent(v, t); // a tool result's blocks
          else if (!STRUCTURAL.has(k)) walkText(v, t);
        }
    }
  }
}

/**
 * Conversations resend their documents every turn: page counts are remembered by a hash of the file
 * (hashing costs a fifth of counting: 17 ms for a 1.4 MB manual). Only counts are kept: a file
 * found unreadable may have been cut short by one request's budget.
 */
const pdfPageCounts = new LRUCache<string, number>({ max: 1024 });
let pdfScans = 0;
/** PDFs whose pages were counted rather than remembered (tests check the memory with it). */
export const pdfFilesScanned = () => pdfScans;

/** A PDF's pages, or an unseen document when its pages cannot be counted. */
function countPdf(bytes: Buffer, t: Tally): void {
  const key = createHash('sha256').update(bytes).digest('base64');
  let pages = pdfPageCounts.get(key);
  if (pages === undefined) {
    pdfScans++;
    pages = pdfPagesAtMost(bytes, t.pdfBudget);
    if (pages !== undefined) pdfPageCounts.set(key, pages);
  }
  if (pages === undefined) t.unseen++;
  else t.pdfPages += pages;
}

/** A messages `document` block: a PDF by its pages, a text by its text, blocks as content. */
function walkDocument(d: Record<string, any>, t: Tally): void {
  walkText([d.title, d.context], t);
  const source = d.source;
  if (source?.type === 'text') walkText(source.data, t);
  else if (source?.type === 'content') walkContent(source.content, t);
  else if (source?.type === 'base64' && source.media_type === PDF_MEDIA_TYPE && typeof source.data === 'string') countPdf(Buffer.from(source.data, 'base64'), t);
  else t.unseen++; // by URL, by file id, or a type the vendor will say whether it takes
}

/** A chat `file` part: a PDF or a text given as a base64 data URL; otherwise (a file id) unseen. */
function walkFile(file: Record<string, any> | undefined, t: Tally): void {
  walkText(file?.filename, t);
  const data = typeof file?.file_data === 'string' ? file.file_data : undefined;
  const type = data === undefined ? undefined : parseDataUrl(data)?.mediaType;
  const bytes = data === undefined ? undefined : dataUrlBytes(data);
  if (bytes && type === PDF_MEDIA_TYPE) countPdf(bytes, t);
  else if (bytes && type === TEXT_MEDIA_TYPE) t.text.push(bytes.toString('utf8'));
  else t.unseen++;
}

/**
 * BPE work is bounded per request estimate: text beyond these
 * many characters or tokens is counted from its UTF-8 length instead (see SAMPLES). On adversarial text (rare
 * scripts, random letters) BPE costs 1 to 2 µs per token, so without a bound one 10 MB body would
 * hold the event loop for seconds; with it, the work is O(bytes) with a small constant. Ordinary
 * prose costs about 0.3 µs per token, so the token bound is the one adversarial text reaches first.
 */
export const BPE_MAX_CHARS = 256 * 1024;
export const BPE_MAX_TOKENS = 32 * 1024;

/**
 * Byte-level BPE never makes more tokens than the text has UTF-8 bytes (every token is at least
 * one byte), whatever the vocabulary: a count by length that is an upper bound for any text and
 * for the other vendors' byte-level tokenizers too, so it takes no SAFETY factor.
 */
const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * Text past the budget is priced from its length at the densest rate (tokens per byte) found in
 * SAMPLES windows of SAMPLE_CHARS taken at random places in it, scaled by SAFETY and never above one
 * token per byte. One token per byte alone would hold about four times an English prompt's real
 * count and refuse long documents as over the context window; random places (not fixed ones) keep
 * a client from steering the samples to its sparsest text.
 */
const SAMPLES = 16;
const SAMPLE_CHARS = 1024;
/** The most BPE work the samples add to a request's budget. */
export const BPE_SAMPLE_CHARS = SAMPLES * SAMPLE_CHARS;

/**
 * BPE merging slows down with the square of a piece's length (a 200 KB unbroken "word" takes
 * seconds), so runs this long of non-space or of space characters are tokenized in slices of
 * RUN_SLICE characters: a little higher than whole (merges across a cut are lost), linear in time.
 */
const LONG_RUN = /\S{128,}|\s{128,}/g;
const RUN_SLICE = 64;
/** Text is tokenized in windows of at most this many characters, so the budget is checked between them. */
const WINDOW = 4096;

/** BPE work left, the tokens counted by BPE so far (scaled by SAFETY in estimates) and the text past the budget. */
interface Count {
  bpe: number;
  rest: string[];
  charsLeft: number;
  tokensLeft: number;
}

const newCount = (): Count => ({ bpe: 0, rest: [], charsLeft: BPE_MAX_CHARS, tokensLeft: BPE_MAX_TOKENS });

/** Tokens of the text past the budget: its bytes at the densest sampled rate (see SAMPLES), at most one per byte. */
function countRest(rest: string[]): number {
  let chars = 0;
  let bytes = 0;
  for (const text of rest) {
    chars += text.length;
    bytes += utf8Bytes(text);
  }
  if (bytes === 0) return 0;
  let rate = 0;
  for (let i = 0; i < SAMPLES; i++) {
    // A random place in the texts taken as one, then a window of that text around it.
    let at = Math.floor(Math.random() * chars);
    let k = 0;
    while (at >= rest[k].length) at -= rest[k++].length;
    const text = rest[k];
    const start = Math.max(0, Math.min(at, text.length - SAMPLE_CHARS));
    const window = text.slice(start, start + SAMPLE_CHARS);
    rate = Math.max(rate, countWindow(window) / utf8Bytes(window));
  }
  return Math.min(bytes, Math.ceil(rate * SAFETY * bytes));
}

/** Characters given to the BPE tokenizer since start (tests check the bound on work with it). */
let bpeChars = 0;
export const bpeCharsTokenized = () => bpeChars;

/**
 * The tokenizer remembers the tokens of the words it merged, 100,000 by default, and a word may be
 * up to 127 characters (LONG_RUN): requests of distinct random words grew the heap by 94 MB (RSS
 * 217 MB; the estimator's own cache below holds at most 8 MB of it), text of distinct short words by
 * 30 MB. At 10,000 the same grew it by 10 and 5 MB, and counting English (documents of 5,400
 * distinct words) was as fast: their words still fit.
 */
const MERGE_CACHE_WORDS = 10_000;
setMergeCacheSize(MERGE_CACHE_WORDS);

/** Special-token text such as "<|endoftext|>" is ordinary text in a prompt (by default the tokenizer throws). */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

function bpe(text: string): number {
  bpeChars += text.length;
  return countTokens(text, AS_TEXT);
}

function countWindow(text: string): number {
  let n = 0;
  // A space where the run was keeps its neighbours apart (at most one token more: errs high).
  const rest = text.replace(LONG_RUN, (run) => {
    for (let i = 0; i < run.length; i += RUN_SLICE) n += bpe(run.slice(i, i + RUN_SLICE));
    return ' ';
  });
  return n + bpe(rest);
}

const isSpace = (code: number) => code === 32 || (code >= 9 && code <= 13) || code === 0xa0 || code === 0x2028 || code === 0x2029 || code === 0x3000 || (code >= 0x2000 && code <= 0x200a) || code === 0x1680 || code === 0x202f || code === 0x205f || code === 0xfeff || code === 0x85;

/**
 * Where a window starting at `start` ends: before a whitespace character followed by a
 * non-whitespace one, where the tokenizer's pre-split cuts anyway (so windows add up to the whole
 * text's count), or at `max` characters when there is no such place nearby (a long run: sliced anyway).
 */
function windowEnd(text: string, start: number, max: number): number {
  const limit = start + max;
  if (limit >= text.length) return text.length;
  for (let i = limit - 1; i > start && i > limit - 256; i--) {
    if (isSpace(text.charCodeAt(i)) && !isSpace(text.charCodeAt(i + 1))) return i;
  }
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit; // never split a surrogate pair
}

/** Counts `text` into `count`: BPE while the budget lasts, then by UTF-8 length. */
function countInto(text: string, count: Count): void {
  let start = 0;
  while (start < text.length) {
    const max = Math.min(WINDOW, count.charsLeft);
    if (max <= 0 || count.tokensLeft <= 0) {
      count.rest.push(start === 0 ? text : text.slice(start));
      return;
    }
    const end = windowEnd(text, start, max);
    const n = countWindow(text.slice(start, end));
    count.bpe += n;
    count.charsLeft -= end - start;
    count.tokensLeft -= n;
    start = end;
  }
}

/**
 * Conversations resend their history every turn: BPE counts of longer texts are remembered
 * (bounded by total characters), so each message is tokenized about once rather than once per turn.
 * A hit costs no budget; only texts counted wholly by BPE are remembered.
 */
const CACHE_FROM = 256;
const cache = new TextCounts(8 * 1024 * 1024, (text) => fingerprint(text, TEXT_READING));

function countCached(text: string, count: Count): void {
  if (text.length < CACHE_FROM) return countInto(text, count);
  const hit = cache.get(text);
  if (hit !== undefined) {
    count.bpe += hit;
    return;
  }
  const before = { bpe: count.bpe, rest: count.rest.length };
  countInto(text, count);
  if (count.rest.length === before.rest) cache.set(text, count.bpe - before.bpe);
}

/**
 * Tools count as their JSON (JSON.stringify of each). Agents resend the same tools every turn, often
 * 20 or more in tens of KB: with the body's text at hand, a tool's count is remembered by the
 * client's own text of it (found by the scan the upstream payload uses), so a resent tool costs neither
 * JSON.stringify nor a count. 20 tools in 65 KB: 35-60 µs an estimate instead of 220-240.
 */
const toolCounts = new TextCounts(2 * 1024 * 1024, (text) => fingerprint(text, TOOL_READING));

function countTools(tools: unknown[], texts: string[] | undefined, count: Count): void {
  const known = texts !== undefined && texts.length === tools.length;
  for (let i = 0; i < tools.length; i++) {
    if (!known) {
      countCached(JSON.stringify(tools[i]), count);
      continue;
    }
    const own = texts[i];
    const hit = toolCounts.get(own);
    if (hit !== undefined) {
      count.bpe += hit;
      continue;
    }
    const before = { bpe: count.bpe, rest: count.rest.length };
    countInto(JSON.stringify(tools[i]), count);
    if (count.rest.length === before.rest) toolCounts.set(own, count.bpe - before.bpe);
  }
}

/** A request's input estimate. */
export interface InputEstimate {
  /** Tokens of what the gateway can see: text (BPE), images, PDF pages; an unseen document counts one page. */
  tokens: number;
  /**
   * Documents the gateway cannot size: given by URL or by file id, or a PDF whose pages it cannot
   * count (encrypted, or coded in a way its scan does not read). Such a document may fill whatever
   * the context window leaves, so a hold must assume it does (offer-pick).
   */
  unseenDocuments: number;
}

/**
 * The input of a request body: system, messages (text, images, documents) and tools (each piece
 * counted on its own). `toolTexts`: gives the client's own text of each tool, when at hand (see
 * countTools); asked only of a body with tools.
 */
export function estimateInput(body: Record<string, any>, _format: WireFormat, toolTexts?: () => string[] | undefined): InputEstimate {
  const t: Tally = { text: [], images: 0, messages: 0, pdfPages: 0, unseen: 0, pdfBudget: pdfScanBudget() };
  if (body.system !== undefined) walkContent(body.system, t);
  if (Array.isArray(body.messages)) {
    t.messages = body.messages.length;
    for (const m of body.messages) {
      if (m === null || typeof m !== 'object') continue;
      for (const [k, v] of Object.entries(m)) {
        if (k === 'content') walkContent(v, t);
        else if (!STRUCTURAL.has(k)) walkText(v, t);
      }
    }
  }
  const count = newCount();
  for (const piece of t.text) countCached(piece, count);
  if (Array.isArray(body.tools)) countTools(body.tools, toolTexts?.(), count);
  const tokens = Math.ceil(count.bpe * SAFETY) + countRest(count.rest) + t.messages * PER_MESSAGE + t.images * PER_IMAGE +
    (t.pdfPages + t.unseen) * PDF_PAGE_TOKENS;
  return { tokens, unseenDocuments: t.unseen };
}

/** Tokens of the text parts of a request body (see estimateInput). */
export const estimateInputTokens = (body: Record<string, any>, format: WireFormat): number => estimateInput(body, format).tokens;

/**
 * Tokens of generated text (for charging a stream that broke before the upstream reported usage):
 * BPE over all of it, with no budget, since the caller bounds the text (metering keeps a 64 KB
 * sample); windows and sliced runs keep the work linear in its length.
 */
export function countTextTokens(text: string): number {
  const count: Count = { bpe: 0, rest: [], charsLeft: Infinity, tokensLeft: Infinity };
  countInto(text, count);
  return count.bpe;
}
