// SseParser and formatEvent: line ends, events split anywhere across chunks, UTF-8 split across
// chunks, multi-line data, comments, fields without data, and the writer's round trip.
import t from 'tap';
import { SseParser, formatEvent, jsonEvent, type SseEvent } from '../../lib/sse.js';

const enc = new TextEncoder();

/** Feed the chunks one by one and collect every event, including those given at end(). */
function parseChunks(chunks: (string | Uint8Array)[]): SseEvent[] {
  const p = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
}

const parseText = (text: string) => parseChunks([text]);

t.test('line ends: LF, CRLF and lone CR give the same events', async (t) => {
  const expected = [{ event: 'a', data: 'one' }, { data: 'two\nthree' }];
  for (const [name, nl] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ]) {
    const text = `event: a${nl}data: one${nl}${nl}data: two${nl}data: three${nl}${nl}`;
    t.same(parseText(text), expected, name);
  }
});

t.test('mixed line ends in one stream', async (t) => {
  t.same(parseText('data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r'), [{ data: 'a\nb\nc' }, { data: 'd' }]);
});

t.test('a CRLF split between two chunks is one line end, not two', async (t) => {
  // "\r" ends chunk one, "\n" starts chunk two: if the LF were taken as an empty line, "a" would be
  // dispatched alone and "b" become a second event.
  t.same(parseChunks(['data: a\r', '\ndata: b\r\n\r\n']), [{ data: 'a\nb' }]);
  t.same(parseChunks(['data: a\r\n\r', '\n']), [{ data: 'a' }], 'the blank line CRLF split');
  t.same(parseChunks(['data: a\r', '\n', '\r', '\n']), [{ data: 'a' }], 'every byte its own chunk');
});

t.test('a CR at a chunk end followed by an empty chunk, then the LF', async (t) => {
  // An empty chunk (a zero-length read) between CR and LF must not forget the pending CR.
  t.same(parseChunks([enc.encode('data: a\r'), new Uint8Array(0), enc.encode('\ndata: b\n\n')]), [{ data: 'a\nb' }]);
});

t.test('a lone CR at a chunk end followed by a non-LF line', async (t) => {
  t.same(parseChunks(['data: a\r', 'data: b\r', '\r']), [{ data: 'a\nb' }]);
});

t.test('events split at every byte offset (two and three chunks)', async (t) => {
  const text =
    'event: message_start\r\ndata: {"type":"message_start","x":"é→😀"}\r\n\r\n' +
    ': keep-alive comment\n\n' +
    'id: 7\nretry: 1500\ndata: line1\ndata:line2\n\n' +
    'data: [DONE]\r\r';
  const bytes = enc.encode(text);
  const expected = parseText(text);
  t.same(expected, [
    { event: 'message_start', data: '{"type":"message_start","x":"é→😀"}' },
    { data: 'line1\nline2', id: '7', retry: 1500 },
    { data: '[DONE]' },
  ]);
  let bad = 0;
  for (let i = 0; i <= bytes.length; i++) {
    const got = parseChunks([bytes.subarray(0, i), bytes.subarray(i)]);
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      bad++;
      if (bad < 4) t.same(got, expected, `split at byte ${i}`);
    }
  }
  t.equal(bad, 0, 'every two-chunk split parses the same');
  // Three non-empty chunks: every pair of split points (empty chunks have their own test above).
  bad = 0;
  for (let i = 1; i < bytes.length; i++) {
    for (let j = i + 1; j < bytes.length; j++) {
      const got = parseChunks([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
      if (JSON.stringify(got) !== JSON.stringify(expected)) bad++;
    }
  }
  t.equal(bad, 0, 'three-chunk splits parse the same');
  // One byte at a time.
  t.same(parseChunks(Array.from(bytes, (b) => Uint8Array.of(b))), expected, 'byte by byte');
});

t.test('multi-byte UTF-8 characters split across chunks', async (t) => {
  for (const ch of ['é', '→', '😀']) {
    const bytes = enc.encode(`data: x${ch}y\n\n`);
    const start = 'data: x'.length;
    const width = enc.encode(ch).length;
    for (let cut = start + 1; cut < start + width; cut++) {
      t.same(parseChunks([bytes.subarray(0, cut), bytes.subarray(cut)]), [{ data: `x${ch}y` }], `${ch} cut after byte ${cut - start}`);
    }
  }
});

t.test('string chunks are accepted too', async (t) => {
  t.same(parseChunks(['da', 'ta: hi\n', '\n']), [{ data: 'hi' }]);
});

t.test('multi-line data is joined with LF', async (t) => {
  t.same(parseText('data: a\ndata: b\ndata: c\n\n'), [{ data: 'a\nb\nc' }]);
  t.same(parseText('data\ndata\n\n'), [{ data: '\n' }], 'bare "data" lines are empty data lines');
});

t.test('comment lines are ignored, also between fields', async (t) => {
  t.same(parseText(': hello\n\n'), [], 'a comment alone dispatches nothing');
  t.same(parseText('data: a\n: in between\ndata: b\n\n'), [{ data: 'a\nb' }]);
  t.same(parseText(':\n:ping\n\ndata: x\n\n'), [{ data: 'x' }]);
});

t.test('event: without data dispatches nothing and does not leak into the next event', async (t) => {
  t.same(parseText('event: ping\n\n'), []);
  t.same(parseText('event: ping\n\ndata: after\n\n'), [{ data: 'after' }], 'the event name is reset at the blank line');
  t.same(parseText('id: 3\nretry: 10\n\n'), [], 'id and retry alone dispatch nothing');
});

t.test('a space after the colon is optional, and only one is removed', async (t) => {
  t.same(parseText('data:no-space\n\n'), [{ data: 'no-space' }]);
  t.same(parseText('data: one-space\n\n'), [{ data: 'one-space' }]);
  t.same(parseText('data:  two-spaces\n\n'), [{ data: ' two-spaces' }]);
  t.same(parseText('event:x\ndata:{"a":1}\n\n'), [{ event: 'x', data: '{"a":1}' }]);
  t.same(parseText('data: a:b: c\n\n'), [{ data: 'a:b: c' }], 'later colons belong to the value');
});

t.test('unknown fields are ignored; invalid retry is ignored', async (t) => {
  t.same(parseText('foo: bar\ndata: x\n\n'), [{ data: 'x' }]);
  t.same(parseText('retry: soon\ndata: x\n\n'), [{ data: 'x' }]);
});

t.test('an unterminated final event is not dispatched at end()', async (t) => {
  const p = new SseParser();
  t.same(p.push('data: complete\n\ndata: partial\n'), [{ data: 'complete' }]);
  t.same(p.end(), []);
});

t.test('end() flushes a truncated UTF-8 sequence without throwing', async (t) => {
  const p = new SseParser();
  const bytes = enc.encode('data: 😀');
  t.same(p.push(bytes.subarray(0, bytes.length - 1)), []);
  t.same(p.end(), []);
});

t.test('formatEvent round trip', async (t) => {
  const events: SseEvent[] = [
    { data: '{"a":1}' },
    { event: 'content_block_delta', data: '{"type":"content_block_delta","delta":{"text":"hé 😀"}}' },
    { data: 'line1\nline2\n\nline4' },
    { data: '' },
    { data: ' leading space' },
    { event: 'x', id: '42', retry: 3000, data: 'with id' },
    { data: '[DONE]' },
  ];
  const text = events.map(formatEvent).join('');
  t.same(parseText(text), events);
  t.equal(formatEvent({ data: 'x' }), 'data: x\n\n');
  t.equal(formatEvent({ event: 'e', data: 'a\nb' }), 'event: e\ndata: a\ndata: b\n\n');
  t.same(parseText(formatEvent({ data: 'a\r\nb\rc' })), [{ data: 'a\nb\nc' }], 'CR and CRLF in data become LF');
});

t.test('jsonEvent', async (t) => {
  t.same(jsonEvent({ a: 1 }), { data: '{"a":1}' });
  t.same(jsonEvent({ a: 1 }, 'e'), { event: 'e', data: '{"a":1}' });
});
