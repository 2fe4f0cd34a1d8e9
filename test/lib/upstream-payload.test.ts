// The upstream body as the client's bytes where its values are the client's own: always the JSON
// of the attempt's body, with the copied values spelled as the client spelled them.
import t from 'tap';
import { clientMembers, clientToolTexts, LARGE_PAYLOAD_CHARS, upstreamPayload } from '../../lib/upstream-payload.js';
import { topLevelMembers } from '../../lib/json-scan.js';

/** What a same-format attempt does: a shallow copy with some values replaced, some removed, some added. */
function attempt(client: Record<string, any>, edit: (body: Record<string, any>) => void): Record<string, any> {
  const body = { ...client };
  edit(body);
  return body;
}

t.test('values the attempt kept are the client bytes, the others are serialized', async (t) => {
  const text = `{ "model" : "alias",\n  "messages": [ {"role": "user", "content": "caf\\u00e9 \\"}\\" {[" } ],\n  "temperature": 1.0, "drop": {"x": [1, 2]},\n  "max_tokens": 10 }`;
  const client = JSON.parse(text);
  const body = attempt(client, (b) => {
    b.model = 'upstream-model';
    delete b.drop;
    b.max_tokens = 20;
    b.stream_options = { include_usage: true };
  });
  const out = String(upstreamPayload(body, client, text));
  t.same(JSON.parse(out), body, 'the JSON of the attempt body');
  t.equal(
    out,
    `{"model":"upstream-model",` +
      `"messages": [ {"role": "user", "content": "caf\\u00e9 \\"}\\" {[" } ],"temperature": 1.0,` +
      `"max_tokens":20,"stream_options":{"include_usage":true}}`,
    'kept members as written (escapes, spaces, 1.0), in the order of the attempt body',
  );
});

t.test('compact client JSON gives exactly JSON.stringify of the attempt body', async (t) => {
  const client = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300) }], n: 1, stop: null, tools: [], stream: true };
  const text = JSON.stringify(client);
  for (const edit of [
    (b: any) => void (b.model = 'up'),
    (b: any) => void delete b.stop,
    (b: any) => void (b.extra = undefined), // left out, as JSON.stringify does
    (b: any) => void (b.messages = [...b.messages, { role: 'assistant', content: 'y' }]),
    (_b: any) => {},
  ]) {
    const body = attempt(client, edit);
    t.equal(upstreamPayload(body, client, text), JSON.stringify(body));
  }
});

t.test('a repeated key: the last member, the one JSON.parse kept', async (t) => {
  const text = '{"a":{"v":1},"b":2,"a":{"v":3}}';
  const client = JSON.parse(text);
  t.equal(upstreamPayload({ ...client }, client, text), '{"a":{"v":3},"b":2}');
});

t.test('an escaped key is found under its decoded name', async (t) => {
  const text = '{"mod\\u0065l":"m","m\\"x":[ 1 ]}';
  const client = JSON.parse(text);
  t.same([...topLevelMembers(text)!.keys()], ['model', 'm"x']);
  t.equal(upstreamPayload({ ...client }, client, text), '{"mod\\u0065l":"m","m\\"x":[ 1 ]}');
});

t.test('literals at the top level end where their member ends', async (t) => {
  const text = '{"a":-0,"b":1e400 ,"c":true,"d":null\n,"e":false}';
  const client = JSON.parse(text);
  t.equal(upstreamPayload({ ...client }, client, text), '{"a":-0,"b":1e400,"c":true,"d":null,"e":false}');
});

t.test('text beyond ASCII is kept as written', async (t) => {
  const text = '{"content":"café 😀 \u00e9","n":1.0}';
  const client = JSON.parse(text);
  t.equal(upstreamPayload({ ...client, n: 2 }, client, text), '{"content":"café 😀 \u00e9","n":2}');
});

t.test('not an object: serialized from the body', async (t) => {
  t.equal(topLevelMembers('[1]'), undefined);
  t.equal(upstreamPayload({ a: 1 }, {}, ' [1] '), '{"a":1}');
  t.same([...topLevelMembers(' { } ')!.keys()], []);
});

t.test('random documents: the payload always parses to the attempt body', async (t) => {
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  const space = () => pick(['', ' ', '\n  ', '\t']);
  const str = () => JSON.stringify(pick(['', 'a', '"', '\\', '}', ']', '{[', 'é', '😀', '\u2028', 'x y']) + pick(['', 'q', '"}']));
  // Text with random spacing (JSON.stringify has none), and the value it parses to.
  const value = (depth: number): string => {
    const kind = depth > 3 ? pick(['s', 'n', 'l']) : pick(['s', 'n', 'l', 'o', 'a']);
    if (kind === 's') return str();
    if (kind === 'n') return pick(['0', '-1.50', '3e2', '1.0', '12345678901234567890']);
    if (kind === 'l') return pick(['true', 'false', 'null']);
    const n = Math.floor(random() * 4);
    const items = Array.from({ length: n }, () => (kind === 'o' ? `${space()}${str()}${space()}:${space()}${value(depth + 1)}` : `${space()}${value(depth + 1)}`));
    return kind === 'o' ? `{${items.join(',')}${space()}}` : `[${items.join(',')}${space()}]`;
  };
  for (let i = 0; i < 300; i++) {
    const keys = Array.from({ length: 1 + Math.floor(random() * 6) }, () => pick(['model', 'messages', 'a', 'b', 'x"y', 'tools']));
    const text = `${space()}{${keys.map((k) => `${space()}${JSON.stringify(k)}${space()}:${space()}${value(0)}${space()}`).join(',')}}${space()}`;
    const client = JSON.parse(text);
    const body = attempt(client, (b) => {
      if (random() < 0.5) b.model = 'up';
      if (random() < 0.3) delete b[pick(Object.keys(b))];
      if (random() < 0.3) b.added = { n: 1 };
    });
    const out = String(upstreamPayload(body, client, text));
    const parsed = JSON.parse(out);
    if (JSON.stringify(parsed) !== JSON.stringify(body)) {
      t.fail(`document ${i}: ${text} gave ${out}`);
      return;
    }
  }
  t.pass('300 documents');
});

t.test('a large payload is its UTF-8 bytes, the same JSON as the text a small one is', async (t) => {
  const long = 'café 😀 "quoted" '.repeat(Math.ceil(LARGE_PAYLOAD_CHARS / 16));
  const text = `{"model": "alias", "messages": [{"role": "user", "content": ${JSON.stringify(long)}}], "n": 1}`;
  const client = JSON.parse(text);
  const out = upstreamPayload({ ...client, model: 'up' }, client, text);
  t.ok(Buffer.isBuffer(out), 'bytes');
  t.equal(out.toString('utf8'), `{"model":"up","messages": [{"role": "user", "content": ${JSON.stringify(long)}}],"n": 1}`);
  const small = upstreamPayload({ ...client, messages: [], model: 'up' }, client, text);
  t.equal(typeof small, 'string', 'a small one stays text');
});

t.test("a request's text is scanned once; its tools' texts are the client's own", async (t) => {
  const text = '{"model": "m", "tools": [ {"name": "a"} , {"name":\n"b"} ], "messages": []}';
  const ctx: { bodyText?: string; bodyMembers?: ReturnType<typeof clientMembers> | null } = { bodyText: text };
  const members = clientMembers(ctx);
  t.equal(clientMembers(ctx), members, 'the same scan');
  t.same(clientToolTexts(ctx), ['{"name": "a"}', '{"name":\n"b"}']);
  t.equal(clientToolTexts({ bodyText: '{"tools": "x"}' }), undefined, 'tools that are not an array');
  t.equal(clientToolTexts({}), undefined, 'no text');
  t.equal(clientMembers({ bodyText: '[1]' }), undefined, 'not an object');
});
