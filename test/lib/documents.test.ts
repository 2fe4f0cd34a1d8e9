// PDF page counts for the input estimate: exact on ordinary files (plain or with the page tree in an
// object stream), never below the truth when a file tries to hide pages, and undefined (the
// estimate then assumes the worst) when the scan cannot see the structure. Data URLs.
import t from 'tap';
import { dataUrlBytes, parseDataUrl, pdfPagesAtMost, pdfScanBudget } from '../../lib/documents.js';
import { buildPdf, type PdfOptions } from '../helpers/pdf.js';

const pages = (o: PdfOptions, budget = pdfScanBudget()) => pdfPagesAtMost(buildPdf(o), budget);

t.test('ordinary PDFs: the page count, written plainly or with the page tree in an object stream', async (t) => {
  for (const n of [1, 7, 120]) {
    t.equal(pages({ pages: n }), n, `${n} pages, a flat tree`);
    t.equal(pages({ pages: n, fanout: 4 }), n, `${n} pages, a tree of nodes of 4`);
    t.equal(pages({ pages: n, fanout: 6, objectStream: true }), n, `${n} pages in an object stream`);
  }
});

t.test('a PDF that hides pages is never counted low', async (t) => {
  t.equal(pages({ pages: 30, count: 1 }), 30, 'a root that claims one page');
  t.equal(pages({ pages: 30, untypedPages: true, count: 1, fanout: 5 }), 30, 'pages without /Type, under nodes, one claimed');
  t.equal(pages({ pages: 30, untypedPages: true, count: 1, objectStream: true }), 30, 'the same in an object stream');
  t.equal(pages({ pages: 30, escapedNames: true, count: 1 }), 30, '/Type /P#61ge is /Page');
  t.equal(pages({ pages: 30, escapedNames: true, untypedPages: true, count: 1, fanout: 5 }), 30, '/K#69ds is /Kids, /P#61ges is /Pages');
  t.equal(pages({ pages: 30, indirectKids: true, untypedPages: true, count: 1 }), 30, 'the root\'s /Kids in another object');
  t.equal(pages({ pages: 3, count: 50 }), 50, 'a count above the pages found is taken as claimed');
});

t.test('what the scan cannot see through is undefined, never a guess', async (t) => {
  t.equal(pdfPagesAtMost(Buffer.from('not a pdf at all'), pdfScanBudget()), undefined, 'not a PDF');
  t.equal(pdfPagesAtMost(Buffer.from('%PDF-1.4\n%%EOF\n'), pdfScanBudget()), undefined, 'no page at all');
  t.equal(pages({ pages: 5, encrypt: true }), undefined, 'encrypted');
  t.equal(pages({ pages: 5, objectStream: true, objectStreamDict: '/DecodeParms << /Predictor 12 /Columns 5 >>' }), undefined, 'an object stream with a predictor');
  t.equal(pages({ pages: 5, objectStream: true, objectStreamDict: '/DP << /Predictor 2 >>' }), undefined, 'the abbreviated name too');
  t.equal(pages({ pages: 5, objectStream: true, objectStreamDict: '/Filter [/FlateDecode /A#48x]' }), undefined, 'another coding, its name escaped');
  t.equal(pages({ pages: 5, rootExtra: '/Note (9 0 obj) ' }), undefined, 'an object header inside a string');
  t.equal(pages({ pages: 5, rootExtra: '/Note (endobj) ' }), undefined, 'endobj inside a string');
  t.equal(pages({ pages: 5, rootExtra: '% a comment\n' }), undefined, 'a comment inside a page-tree node');
  t.equal(pages({ pages: 5, objectStream: true }, { ...pdfScanBudget(), inflate: 10 }), undefined, 'more to inflate than the budget has left');
  t.equal(pages({ pages: 5 }, { ...pdfScanBudget(), objects: 5 }), undefined, 'more objects than the budget has left');
  t.equal(pages({ pages: 5, objectStream: true }, { ...pdfScanBudget(), objects: 4 }), undefined, 'objects in object streams count too');
  const budget = pdfScanBudget();
  const full = pdfScanBudget();
  t.equal(pdfPagesAtMost(buildPdf({ pages: 5, objectStream: true }), budget), 5);
  t.ok(budget.inflate < full.inflate && budget.objects < full.objects, 'the work done is taken from the budget');
});

t.test('the work is linear in the size: hostile repetitions take milliseconds, not minutes', async (t) => {
  // 100,000 repetitions each: a scan that went back over the text per occurrence would take minutes.
  const hostile = [
    '/Kids [ '.repeat(100_000),
    '1 0 obj '.repeat(100_000),
    'obj '.repeat(1_000_000),
    '/Type /ObjStm '.repeat(100_000),
    '/Type /P#61ge '.repeat(100_000),
    '1 0 obj << /Kids [' + '2 0 R '.repeat(100_000) + '] >> endobj',
    '1 0 obj <</Type/Pages/Kids[' + '1 0 R '.repeat(100_000) + ']>> endobj',
    // Many nodes naming one large indirect /Kids array.
    '2 0 obj [' + '3 0 R '.repeat(50_000) + '] endobj ' + Array.from({ length: 20_000 }, (_, i) => `${i + 10} 0 obj <</Type/Pages/Kids 2 0 R>> endobj `).join(''),
  ];
  for (const text of hostile) {
    const started = performance.now();
    pdfPagesAtMost(Buffer.from(`%PDF-1.4\n${text}`, 'latin1'), pdfScanBudget());
    const ms = performance.now() - started;
    t.ok(ms < 2000, `${text.slice(0, 16)}… (${(text.length / 1e6).toFixed(1)} MB): ${ms.toFixed(0)} ms`);
  }
});

t.test('data URLs', async (t) => {
  t.same(parseDataUrl('data:application/pdf;base64,JVBE'), { mediaType: 'application/pdf', base64: true, dataAt: 28 });
  t.same(parseDataUrl('data:Text/Plain;charset=utf-8;base64,eA=='), { mediaType: 'text/plain', base64: true, dataAt: 37 });
  t.same(parseDataUrl('data:text/plain,hello'), { mediaType: 'text/plain', base64: false, dataAt: 16 });
  t.equal(parseDataUrl('JVBERi0xLjQ='), undefined, 'raw base64 is not a data URL');
  t.same(dataUrlBytes('data:text/plain;base64,aGk='), Buffer.from('hi'));
  t.equal(dataUrlBytes('data:text/plain,hi'), undefined, 'only base64 data URLs are decoded');
});
