// Facts about document input shared by the input estimate, the format conversions and the simulated
// provider: data URLs, and how many pages a PDF can have.
import { inflateSync } from 'node:zlib';

export const PDF_MEDIA_TYPE = 'application/pdf';
export const TEXT_MEDIA_TYPE = 'text/plain';
/** Document types both formats carry: a messages `document` block and a chat `file` part. */
export const PORTABLE_DOCUMENT_TYPES: ReadonlySet<string> = new Set([PDF_MEDIA_TYPE, TEXT_MEDIA_TYPE]);

export interface DataUrl {
  /** Lowercased, parameters left out: `application/pdf`. */
  mediaType: string;
  base64: boolean;
  /** Where the data starts in the URL. */
  dataAt: number;
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),/i;

/** `data:<type>[;param…][;base64],<data>` → its parts; undefined for any other string. */
export function parseDataUrl(url: string): DataUrl | undefined {
  const m = DATA_URL.exec(url);
  if (!m) return undefined;
  const params = m[2].toLowerCase().split(';');
  return { mediaType: m[1].trim().toLowerCase(), base64: params.includes('base64'), dataAt: m[0].length };
}

/** The data of a base64 data URL, decoded; undefined when it is not one. */
export function dataUrlBytes(url: string): Buffer | undefined {
  const d = parseDataUrl(url);
  return d?.base64 ? Buffer.from(url.slice(d.dataAt), 'base64') : undefined;
}

/**
 * The work one request may spend counting PDF pages, on the event loop: object-stream data inflated
 * (bytes), and objects read. Ordinary files use a small part (a 1.4 MB manual: 3,500 objects); a
 * file made of nothing but object headers would otherwise cost about a millisecond per 2,000.
 */
export interface PdfScanBudget {
  inflate: number;
  objects: number;
}

export const pdfScanBudget = (): PdfScanBudget => ({ inflate: 16 * 1024 * 1024, objects: 50_000 });

// A name ends at whitespace or a delimiter; `#xx` may stand for any of its characters (`/P#61ge` is
// /Page): the patterns take both spellings, so the text is never rewritten.
const DELIMITER = '[\\s()<>\\[\\]{}/%]';
const NAME_END = `(?=${DELIMITER}|$)`;
const hexOf = (c: string) => [...c.charCodeAt(0).toString(16).padStart(2, '0')].map((h) => (/[a-f]/.test(h) ? `[${h}${h.toUpperCase()}]` : h)).join('');
/** A name pattern (without the slash's own escape: a slash cannot be written another way). */
const name = (n: string) => `/${[...n].map((c) => `(?:${c}|#${hexOf(c)})`).join('')}${NAME_END}`;
const PAGE = new RegExp(`${name('Type')}\\s*${name('Page')}`, 'g');
const PAGES = new RegExp(`${name('Type')}\\s*${name('Pages')}`);
const OBJECT_STREAM = new RegExp(`${name('Type')}\\s*${name('ObjStm')}`);
const ENCRYPT = new RegExp(name('Encrypt'));
/** An object's header, `12 0 obj`: found by its keyword (a regex starting at every digit is four times slower). */
const OBJ_KEYWORD = /obj(?![^\s()<>[\]{}/%])/g;
const HEADER_BEFORE = /(\d+)\s+\d+\s+$/;
/** Where an object's text ends: its stream data, or `endobj`. */
const OBJECT_END = /(?<!end)stream(?=[\r\n])|endobj/g;
const REFERENCE = /(\d+)\s+\d+\s+R/g;
const KIDS = new RegExp(`${name('Kids')}\\s*(?:\\[([^\\]]*)\\]|(\\d+)\\s+\\d+\\s+R)`, 'g');
const COUNT = new RegExp(`${name('Count')}\\s*(\\d+)`);
const N = new RegExp(`${name('N')}\\s*(\\d+)`);
const FIRST = new RegExp(`${name('First')}\\s*(\\d+)`);
/** Codings besides Flate (names and abbreviations) and predictors: they would hide an object stream's text. */
const OTHER_CODING = new RegExp(
  ['DecodeParms', 'DP', 'Predictor', 'ASCIIHexDecode', 'AHx', 'ASCII85Decode', 'A85', 'LZWDecode', 'LZW', 'RunLengthDecode', 'RL', 'CCITTFaxDecode', 'CCF', 'DCTDecode', 'DCT', 'JBIG2Decode', 'JPXDecode', 'Crypt'].map(name).join('|'),
);

/** PDF objects by number, every version of each (incremental updates add versions): their text up to any stream data. */
type Objects = Map<number, string[]>;

function addObject(objects: Objects, id: number, text: string): void {
  const versions = objects.get(id);
  if (versions) versions.push(text);
  else objects.set(id, [text]);
}

/**
 * Whether PDF object text has its strings closed and no comment: a header or a `stream` keyword
 * inside a string would cut an object short, and hide what follows from the scan.
 */
function wellFormed(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c /* \ */) i++;
    else if (c === 0x28 /* ( */) depth++;
    else if (c === 0x29 /* ) */ && --depth < 0) return false;
    else if (c === 0x25 /* % */ && depth === 0) return false;
  }
  return depth === 0;
}

/**
 * The objects of the file's body: each from its header to its `endobj`, its stream data, or the next
 * header. Undefined past the budget's objects (every `obj` keyword counts), or when an object's
 * strings do not close.
 */
function bodyObjects(text: string, objects: Objects, budget: PdfScanBudget): { id: number; dict: string; dataAt: number }[] | undefined {
  const cuts: number[] = [];
  const kinds: boolean[] = [];
  OBJECT_END.lastIndex = 0;
  for (let m = OBJECT_END.exec(text); m; m = OBJECT_END.exec(text)) {
    cuts.push(m.index);
    kinds.push(m[0] === 'stream');
  }
  const streams: { id: number; dict: string; dataAt: number }[] = [];
  const headers: { id: number; at: number; end: number }[] = [];
  OBJ_KEYWORD.lastIndex = 0;
  for (let m = OBJ_KEYWORD.exec(text); m; m = OBJ_KEYWORD.exec(text)) {
    if (--budget.objects < 0) return undefined;
    const from = Math.max(0, m.index - 32);
    const h = HEADER_BEFORE.exec(text.slice(from, m.index));
    if (h) headers.push({ id: Number(h[1]), at: from + h.index, end: m.index + 3 });
  }
  let cut = 0;
  for (let k = 0; k < headers.length; k++) {
    const h = headers[k];
    const start = h.end;
    const next = k + 1 < headers.length ? headers[k + 1].at : text.length;
    while (cut < cuts.length && cuts[cut] < start) cut++;
    const keyword = cut < cuts.length && cuts[cut] < next ? cuts[cut] : -1;
    const body = text.slice(start, keyword === -1 ? next : keyword);
    if (!wellFormed(body)) return undefined;
    addObject(objects, h.id, body);
    if (keyword !== -1 && kinds[cut]) {
      let dataAt = keyword + 'stream'.length;
      if (text[dataAt] === '\r') dataAt++;
      if (text[dataAt] === '\n') dataAt++;
      streams.push({ id: h.id, dict: body, dataAt });
    }
  }
  return streams;
}

/** The objects of an object stream: `/N` pairs of number and offset, the offsets counted from `/First`. */
function streamObjects(data: string, dict: string, objects: Objects, budget: PdfScanBudget): boolean {
  const n = Number(N.exec(dict)?.[1]);
  const first = Number(FIRST.exec(dict)?.[1]);
  if (!Number.isSafeInteger(n) || !Number.isSafeInteger(first) || first > data.length) return false;
  if ((budget.objects -= n) < 0) return false;
  const header = data.slice(0, first).trim().split(/\s+/).map(Number);
  if (header.length < 2 * n || header.some((x) => !Number.isSafeInteger(x))) return false;
  for (let k = 0; k < n; k++) {
    const from = first + header[2 * k + 1];
    const to = k + 1 < n ? first + header[2 * k + 3] : data.length;
    if (!(from <= to && to <= data.length)) return false;
    const body = data.slice(from, to);
    if (!wellFormed(body)) return false;
    addObject(objects, header[2 * k], body);
  }
  return true;
}

/**
 * At most how many pages a PDF reader finds in `pdf`, erring high: the largest of its page objects
 * (`/Type /Page`), the leaves of its page tree (every object reached through /Kids from a `/Type
 * /Pages` node, walked by structure as lenient readers do, types aside) and the page count a tree
 * node claims. Objects in Flate-compressed object streams (where PDF 1.5 writers put the page tree)
 * are read too. Undefined when the file hides its structure from this scan: not a PDF, encrypted,
 * an object stream in another coding or with a predictor, a header or `stream` keyword inside a
 * string, no page found, or more work than `budget` has left (it is taken from it). Linear in the
 * file's size plus what is inflated.
 */
export function pdfPagesAtMost(pdf: Buffer, budget: PdfScanBudget): number | undefined {
  if (!pdf.subarray(0, 1024).includes('%PDF-')) return undefined;
  const text = pdf.toString('latin1');
  if (ENCRYPT.test(text)) return undefined;
  const objects: Objects = new Map();
  const streams = bodyObjects(text, objects, budget);
  if (!streams) return undefined;
  let typed = 0;
  const count = (t: string) => {
    PAGE.lastIndex = 0;
    while (PAGE.exec(t)) typed++;
  };
  for (const versions of objects.values()) for (const t of versions) count(t);
  for (const { dict, dataAt } of streams) {
    if (!OBJECT_STREAM.test(dict)) continue;
    if (OTHER_CODING.test(dict)) return undefined;
    const end = text.indexOf('endstream', dataAt);
    if (end === -1) return undefined;
    let inflated: Buffer;
    try {
      inflated = inflateSync(pdf.subarray(dataAt, end), { maxOutputLength: Math.max(1, budget.inflate) });
    } catch {
      return undefined; // not Flate data, or over the budget
    }
    budget.inflate -= inflated.length;
    const contained: Objects = new Map();
    if (!streamObjects(inflated.toString('latin1'), dict, contained, budget)) return undefined;
    for (const [id, versions] of contained) for (const t of versions) addObject(objects, id, t), count(t);
  }
  const pages = Math.max(typed, pageTree(objects));
  return pages > 0 ? pages : undefined;
}

/** The leaves under every `/Type /Pages` node, or the largest count such a node claims, whichever is more. */
function pageTree(objects: Objects): number {
  const seen = new Set<number>();
  const arraysRead = new Set<number>();
  let leaves = 0;
  let claimed = 0;
  const kidsOf = (id: number): number[] | undefined => {
    let kids: number[] | undefined;
    for (const t of objects.get(id) ?? []) {
      KIDS.lastIndex = 0;
      for (let m = KIDS.exec(t); m; m = KIDS.exec(t)) {
        kids ??= [];
        // An indirect /Kids array is another object (its text is the array), read once: its kids are the same for every node naming it.
        const arrayId = m[2] === undefined ? undefined : Number(m[2]);
        if (arrayId !== undefined && arraysRead.has(arrayId)) continue;
        if (arrayId !== undefined) arraysRead.add(arrayId);
        const array = m[1] ?? (objects.get(arrayId!) ?? []).join(' ');
        for (const r of array.matchAll(REFERENCE)) kids.push(Number(r[1]));
      }
    }
    return kids;
  };
  const visit = (root: number) => {
    const stack = [root];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      const kids = kidsOf(id);
      if (kids) stack.push(...kids);
      else leaves++;
    }
  };
  for (const [id, versions] of objects) {
    for (const t of versions) {
      if (!PAGES.test(t)) continue;
      claimed = Math.max(claimed, Number(COUNT.exec(t)?.[1] ?? 0));
      visit(id);
    }
  }
  return Math.max(leaves, claimed);
}
