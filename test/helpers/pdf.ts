// Small PDFs for tests of document input: N pages of text, written plainly or with the page tree
// in a Flate-compressed object stream (as PDF 1.5 writers do), plus the tricks a client could try
// to make its pages look fewer than they are.
import { deflateSync } from 'node:zlib';

export interface PdfOptions {
  pages: number;
  /** Page-tree nodes of at most this many kids (a flat tree when absent). */
  fanout?: number;
  /** Put the catalog and the page tree in an object stream. */
  objectStream?: boolean;
  /** Leave /Type out of the pages (lenient readers still take them as pages). */
  untypedPages?: boolean;
  /** What the root claims as its page count (default: the truth). */
  count?: number;
  /** Write the names with `#xx` escapes: `/Type /P#61ge`, `/P#61ges`, `/K#69ds`. */
  escapedNames?: boolean;
  /** The root's /Kids as an indirect array object. */
  indirectKids?: boolean;
  /** Object stream dictionary extras, e.g. `/DecodeParms << /Predictor 12 /Columns 5 >>`. */
  objectStreamDict?: string;
  /** Extra text in the root node's dictionary, before /Kids. */
  rootExtra?: string;
  /** Add an /Encrypt entry to the trailer. */
  encrypt?: boolean;
  /** Bytes of comment after the header: a large file of few pages. */
  padding?: number;
}

export function buildPdf(o: PdfOptions): Buffer {
  const objects = new Map<number, string>();
  const streams = new Map<number, { dict: string; data: Buffer }>();
  let next = 3; // 1: catalog, 2: root of the page tree
  const typePage = o.untypedPages ? '' : o.escapedNames ? '/Type /P#61ge ' : '/Type /Page ';
  const content = next++;
  streams.set(content, { dict: '', data: Buffer.from('BT /F1 12 Tf 72 720 Td (Hello) Tj ET') });
  const pages = Array.from({ length: o.pages }, () => next++);
  const node = (id: number, parent: number | undefined, kids: number[], count: number, extra = '') => {
    const refs = kids.map((k) => `${k} 0 R`).join(' ');
    const kidsName = o.escapedNames ? '/K#69ds' : '/Kids';
    let kidsEntry = `${kidsName} [${refs}]`;
    if (o.indirectKids && parent === undefined) {
      const array = next++;
      objects.set(array, `[${refs}]`);
      kidsEntry = `${kidsName} ${array} 0 R`;
    }
    objects.set(id, `<< /Type ${o.escapedNames ? '/P#61ges' : '/Pages'} ${parent === undefined ? '' : `/Parent ${parent} 0 R `}${extra}${kidsEntry} /Count ${count} >>`);
  };
  const build = (id: number, parent: number | undefined, leaves: number[], extra?: string) => {
    const fanout = o.fanout ?? leaves.length;
    if (leaves.length <= fanout) {
      for (const p of leaves) objects.set(p, `<< ${typePage}/Parent ${id} 0 R /MediaBox [0 0 612 792] /Contents ${content} 0 R >>`);
      node(id, parent, leaves, parent === undefined ? (o.count ?? leaves.length) : leaves.length, extra);
      return;
    }
    const kids: number[] = [];
    for (let i = 0; i < leaves.length; i += fanout) {
      const kid = next++;
      kids.push(kid);
      build(kid, id, leaves.slice(i, i + fanout));
    }
    node(id, parent, kids, parent === undefined ? (o.count ?? leaves.length) : leaves.length, extra);
  };
  build(2, undefined, pages, o.rootExtra);
  objects.set(1, '<< /Type /Catalog /Pages 2 0 R >>');

  let body = '';
  if (o.objectStream) {
    const ids = [...objects.keys()];
    let header = '';
    let text = '';
    for (const id of ids) {
      header += `${id} ${text.length} `;
      text += `${objects.get(id)}\n`;
    }
    const first = header.length;
    objects.clear();
    streams.set(next++, { dict: `/Type /ObjStm /N ${ids.length} /First ${first} /Filter /FlateDecode ${o.objectStreamDict ?? ''}`, data: deflateSync(Buffer.from(header + text, 'latin1')) });
  }
  const parts: Buffer[] = [Buffer.from(`%PDF-1.5\n%\xe2\xe3\xcf\xd3\n${o.padding ? `% ${'x'.repeat(o.padding)}\n` : ''}`, 'latin1')];
  const offsets: [number, number][] = [];
  let at = parts[0].length;
  const add = (id: number, buf: Buffer) => {
    offsets.push([id, at]);
    parts.push(buf);
    at += buf.length;
  };
  for (const [id, text] of objects) add(id, Buffer.from(`${id} 0 obj\n${text}\nendobj\n`, 'latin1'));
  for (const [id, s] of streams) {
    add(id, Buffer.concat([Buffer.from(`${id} 0 obj\n<< ${s.dict} /Length ${s.data.length} >>\nstream\n`, 'latin1'), s.data, Buffer.from('\nendstream\nendobj\n')]));
  }
  offsets.sort((a, b) => a[0] - b[0]);
  body = `xref\n0 ${next}\n0000000000 65535 f \n`;
  const byId = new Map(offsets);
  for (let id = 1; id < next; id++) body += `${String(byId.get(id) ?? 0).padStart(10, '0')} 00000 ${byId.has(id) ? 'n' : 'f'} \n`;
  body += `trailer\n<< /Size ${next} /Root 1 0 R${o.encrypt ? ' /Encrypt 99 0 R' : ''} >>\nstartxref\n${at}\n%%EOF\n`;
  parts.push(Buffer.from(body, 'latin1'));
  return Buffer.concat(parts);
}

/** The PDF as base64, as document blocks and file parts carry it. */
export const pdfBase64 = (o: PdfOptions): string => buildPdf(o).toString('base64');
