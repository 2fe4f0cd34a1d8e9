// Values generated from JSON Schemas (tool arguments, structured output) validate against them
// (checked by ajv), and a hostile schema cannot make the generator loop or grow without bound.
import t, { type Test } from 'tap';
import fc from 'fast-check';
import { startSimulator } from '../../../lib/simulator/index.js';
import { valueFor, WALK_NODE_BOUND } from '../../../lib/simulator/schema-value.js';
import { schemaErrors } from '../../helpers/json-schema.js';

const valid = (t: Test, schema: object, what: string, draft?: '07') => {
  const value = valueFor(schema);
  t.equal(schemaErrors(schema, value, draft), undefined, `${what}: ${JSON.stringify(value)}`);
  return value;
};

t.test('the shapes tool and output schemas use', async (t) => {
  t.same(valueFor({ type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' }, metric: { type: 'boolean' } } }), {
    city: 'value-city',
    days: 42,
    metric: true,
  }, 'strings name their member, numbers are 42, booleans true');
  t.same(valueFor({ type: 'object', properties: {} }), {});
  t.same(valueFor({ type: 'object' }), {});
  valid(t, { type: 'object', properties: { unit: { enum: ['c', 'f'] }, kind: { const: 'x' }, n: { type: ['integer', 'null'] } }, required: ['unit', 'kind', 'n'] }, 'enum, const, type list');
  valid(t, { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'array', items: { type: 'object', properties: { c: { type: 'number' } }, required: ['c'] } } }, required: ['b'] } }, required: ['a'] }, 'nested objects and arrays');
  const formats = ['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uri-reference', 'uuid', 'json-pointer', 'regex'];
  valid(t, { type: 'object', properties: Object.fromEntries(formats.map((f) => [f, { type: 'string', format: f }])), required: formats }, 'string formats');
  valid(t, { type: 'array', items: { type: 'string', format: 'uuid' }, minItems: 3, uniqueItems: true }, 'unique uuids');
  valid(t, { type: 'array', items: { type: 'string' }, minItems: 4, uniqueItems: true }, 'unique strings');
  valid(t, { type: 'array', items: { type: 'integer', minimum: 0, maximum: 100 }, minItems: 4, uniqueItems: true }, 'unique numbers');
  valid(t, { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, minItems: 3, uniqueItems: true }, 'unique objects');
  valid(t, { type: 'string', minLength: 40 }, 'minLength pads');
  t.equal(valid(t, { type: 'string', maxLength: 3 }, 'maxLength cuts'), 'val');
  valid(t, { type: 'object', properties: { '😀😀😀😀😀': { type: 'string', maxLength: 8 } }, required: ['😀😀😀😀😀'] }, 'lengths in code points');
});

t.test('numbers within bounds and steps', async (t) => {
  const cases: object[] = [
    { type: 'integer', minimum: 100 },
    { type: 'integer', maximum: -5 },
    { type: 'integer', exclusiveMinimum: 42 },
    { type: 'integer', exclusiveMaximum: 42 },
    { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
    { type: 'number', minimum: 0.5, maximum: 0.5 },
    { type: 'number', multipleOf: 0.1 },
    { type: 'number', multipleOf: 0.01, minimum: 1.005 },
    { type: 'integer', multipleOf: 7, minimum: 50, maximum: 60 },
    { type: 'integer', multipleOf: 1000, minimum: -5, maximum: 5 },
    { type: 'number', minimum: 1e300 },
    { type: 'integer', minimum: -1e20, maximum: -1e20 + 1e6 },
    // Found by the property below: the multiples next to the bound (-1017, -1018 times 0.1) both fail
    // the validator's floating-point test, so the value must be looked for further inside.
    { type: 'number', multipleOf: 0.1, exclusiveMinimum: -513, exclusiveMaximum: -101.7 },
  ];
  for (const schema of cases) valid(t, schema, JSON.stringify(schema));
  t.equal(valueFor({ type: 'integer', minimum: 10, exclusiveMinimum: true, maximum: 10 + 1 }), 11, 'draft-04 boolean exclusive bounds');
});

t.test('combinators and references', async (t) => {
  t.equal(valid(t, { anyOf: [{ type: 'null' }, { type: 'string' }] }, 'nullable anyOf'), 'value-value', 'the non-null branch');
  valid(t, { oneOf: [{ type: 'integer' }, { type: 'string' }] }, 'oneOf');
  valid(t, { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer', minimum: 50 } }, required: ['b'] }] }, 'allOf merged');
  valid(t, { allOf: [{ type: 'number' }, { type: 'integer' }, { minimum: 45 }] }, 'allOf narrows number to integer');
  valid(t, { type: 'object', properties: { a: { $ref: '#/$defs/A' }, b: { $ref: '#/definitions/B' } }, required: ['a', 'b'], $defs: { A: { type: 'integer', minimum: 3, maximum: 4 } }, definitions: { B: { enum: ['x'] } } }, '$defs and definitions');
  valid(t, { $defs: { n: { type: 'integer', minimum: 0 } }, $ref: '#/$defs/n', minimum: 50 }, 'keywords beside a $ref narrow it');
  valid(t, { type: 'object', properties: { 'a/b': { type: 'integer', minimum: 99 }, c: { $ref: '#/properties/a~1b' } }, required: ['c'] }, 'JSON pointer escapes');
  valid(t, { $defs: { node: { type: 'object', properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }, required: ['value'] } }, $ref: '#/$defs/node' }, 'a recursive tree');
  valid(t, { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false, minItems: 2 }, 'prefixItems, closed');
  valid(t, { type: 'array', items: [{ type: 'string' }, { type: 'boolean' }], additionalItems: false }, 'draft-07 tuple', '07');
  valid(t, { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'integer' }, minProperties: 3 }, 'minProperties fills with additionalProperties');
  valid(t, { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } }, required: ['c'], maxProperties: 1 }, 'maxProperties keeps the required');
  t.equal(valueFor({ $ref: '#/$defs/missing' }), 'value-value', 'an unknown reference allows anything');
});

t.test('a member named __proto__ is a member', async (t) => {
  const schema = { type: 'object', properties: JSON.parse('{"__proto__": {"type": "object", "properties": {"polluted": {"type": "boolean"}}}}'), required: ['__proto__'] };
  const value = valueFor(schema) as Record<string, unknown>;
  t.ok(Object.hasOwn(value, '__proto__'));
  t.equal(Object.getPrototypeOf(value), Object.prototype);
  t.equal(JSON.stringify(value), '{"__proto__":{"polluted":true}}');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

// Bounded work, counted (a wall-clock bound would fail on a busy machine: timings belong in the bench).
t.test('hostile schemas: bounded work and size', async (t) => {
  const deep: Record<string, unknown> = { type: 'string' };
  let nested = deep;
  for (let i = 0; i < 50_000; i++) nested = { type: 'array', items: nested, minItems: 1 };
  const wide = (n: number) => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { $ref: '#' }])), required: Array.from({ length: n }, (_, i) => `p${i}`) });
  const hostile: [string, unknown][] = [
    ['a required member of its own type (no finite value exists)', { $defs: { n: { type: 'object', properties: { next: { $ref: '#/$defs/n' } }, required: ['next'] } }, $ref: '#/$defs/n' }],
    ['two required members of its own type (2^depth)', wide(2)],
    ['ten required members of its own type', wide(10)],
    ['10,000 required members of its own type', wide(10_000)],
    ['strings of a billion characters in arrays of arrays', { type: 'array', minItems: 1e9, items: { type: 'array', minItems: 1e9, items: { type: 'string', minLength: 1e9 } } }],
    ['arrays of arrays, each with many items', { $defs: { a: { type: 'array', minItems: 1000, items: { $ref: '#/$defs/a' } } }, $ref: '#/$defs/a' }],
    ['a reference cycle without content', { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }],
    ['allOf of itself', { allOf: [{ $ref: '#' }], anyOf: [{ $ref: '#' }] }],
    ['50,000 levels of items', nested],
    ['a billion items', { type: 'array', minItems: 1e9, items: { type: 'string', minLength: 1e9 } }],
    ['a billion properties', { type: 'object', minProperties: 1e9 }],
    ['anyOf of many nulls', { anyOf: Array.from({ length: 10_000 }, () => ({ type: 'null' })) }],
  ];
  for (const [what, schema] of hostile) {
    const cost = { nodes: 0 };
    const json = JSON.stringify(valueFor(schema, 'value', cost)) ?? '';
    // Each place past the bound is visited once and answered null: a few more than the bound.
    t.ok(cost.nodes <= WALK_NODE_BOUND + 64, `${what}: ${cost.nodes} schema nodes visited`);
    t.ok(json.length < 300_000, `${what}: ${json.length} characters`);
  }
});

// --- Random schemas that have a value: every generated value validates ---

const key = fc.string({ minLength: 1, maxLength: 6 });
const formats = ['date-time', 'date', 'time', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid', 'duration'];
const stringSchema = fc.oneof(
  fc.record({ type: fc.constant('string'), format: fc.constantFrom(...formats) }),
  fc.tuple(fc.nat(30), fc.nat(30), fc.boolean()).map(([min, extra, bounded]) => ({ type: 'string', minLength: min, ...(bounded ? { maxLength: min + extra } : {}) })),
);
const numberSchema = fc
  .record({
    type: fc.constantFrom('integer', 'number'),
    lo: fc.integer({ min: -1000, max: 1000 }),
    width: fc.integer({ min: 0, max: 1000 }),
    step: fc.constantFrom(undefined, 1, 2, 5, 0.5, 0.25, 0.1),
    bounds: fc.constantFrom('none', 'min', 'max', 'both', 'exclusive'),
  })
  .map(({ type, lo, width, step, bounds }) => {
    const hi = lo + width + Math.max(step ?? 1, type === 'integer' ? 1 : 0) * 3;
    const s: Record<string, unknown> = { type };
    // An integer's step is whole (an integer that is a multiple of 0.25 may not exist in a small range).
    if (step !== undefined && (type === 'number' || Number.isInteger(step))) s.multipleOf = step;
    if (bounds === 'min' || bounds === 'both') s.minimum = lo;
    if (bounds === 'max' || bounds === 'both') s.maximum = hi;
    if (bounds === 'exclusive') Object.assign(s, { exclusiveMinimum: lo, exclusiveMaximum: hi });
    return s;
  });
const scalar = fc.oneof(
  stringSchema,
  numberSchema,
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { minLength: 1, maxLength: 4 }).map((values) => ({ enum: values })),
  fc.jsonValue({ maxDepth: 2 }).map((value) => ({ const: value })),
);
const { schema } = fc.letrec<{ schema: Record<string, unknown> }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    { weight: 3, arbitrary: scalar },
    fc
      .tuple(fc.dictionary(key, tie('schema'), { maxKeys: 3 }), fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), fc.constantFrom(undefined, false, true), fc.nat(3))
      .map(([properties, req, additional, minProperties]) => {
        const s: Record<string, unknown> = { type: 'object', properties, required: Object.keys(properties).filter((_, i) => req[i]) };
        if (additional !== undefined) s.additionalProperties = additional;
        else s.minProperties = minProperties;
        return s;
      }),
    fc.tuple(tie('schema'), fc.nat(2), fc.nat(3)).map(([items, min, extra]) => ({ type: 'array', items, minItems: min, maxItems: min + extra })),
    fc.tuple(fc.array(tie('schema'), { minLength: 1, maxLength: 3 }), fc.boolean()).map(([prefixItems, closed]) => ({ type: 'array', prefixItems, ...(closed ? { items: false } : {}) })),
    fc.constant({ type: 'array', items: { type: 'string' }, minItems: 3, uniqueItems: true }),
    fc.array(tie('schema'), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
    tie('schema').map((s) => ({ anyOf: [{ type: 'null' }, s] })),
  ),
}));

t.test('property: a value generated for a random schema validates against it', async (t) => {
  fc.assert(
    fc.property(schema, fc.boolean(), (inner, referenced) => {
      const s = referenced ? { $defs: { inner }, $ref: '#/$defs/inner' } : inner;
      const value = valueFor(s);
      const errors = schemaErrors(s, value);
      if (errors !== undefined) throw new Error(`${errors}\nvalue: ${JSON.stringify(value)}`);
    }),
    { numRuns: 1500 },
  );
  t.pass('1500 random schemas');
});

// --- Any JSON as a schema (a client's garbage): no exception, a value JSON can carry ---

const keywords = ['type', 'properties', 'required', 'items', 'prefixItems', 'additionalProperties', 'additionalItems', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'definitions', 'minItems', 'maxItems', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'format', 'minProperties', 'maxProperties', '__proto__'];
const { garbage } = fc.letrec<{ garbage: unknown }>((tie) => ({
  garbage: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom('#', '#/$defs/a', '#/properties', '#/', '#/%E0%A4%A', 'object', 'array', 'integer', 'null', -1, 1e308, -1e308, 0.1),
    fc.dictionary(fc.constantFrom(...keywords), tie('garbage'), { maxKeys: 5 }),
    // Schema-shaped, so that the walks go deep.
    fc.record(
      {
        type: fc.constantFrom('object', 'array', 'string', 'integer', 'number', 'boolean', 'null', ['object', 'null'], 'nonsense'),
        properties: fc.dictionary(fc.string({ maxLength: 3 }), tie('garbage'), { maxKeys: 3 }),
        required: fc.oneof(fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }), tie('garbage')),
        additionalProperties: fc.oneof(fc.boolean(), tie('garbage')),
        items: tie('garbage'),
        anyOf: fc.array(tie('garbage'), { maxLength: 3 }),
      },
      { requiredKeys: ['type'] },
    ),
    fc.array(tie('garbage'), { maxLength: 4 }),
  ),
}));

t.test('property: any JSON as a schema gives a JSON value, without an exception', async (t) => {
  fc.assert(
    fc.property(garbage, (s) => {
      for (const schema of [s, { type: 'object', properties: { a: s }, $defs: { a: s } }]) {
        const text = JSON.stringify(valueFor(schema));
        if (typeof text !== 'string') throw new Error(`not JSON: ${String(text)}`);
      }
    }),
    { numRuns: 3000 },
  );
  t.pass('3000 garbage schemas');
});

t.test('property: garbage schemas in tools and output formats never make the simulator fail', async (t) => {
  const sim = await startSimulator();
  t.teardown(() => sim.close());
  const post = async (path: string, body: object) => {
    const res = await fetch(sim.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 500) throw new Error(`${res.status} ${text}\nbody: ${JSON.stringify(body)}`);
  };
  const messages = [{ role: 'user', content: 'json <<sim tools=2>>' }];
  await fc.assert(
    fc.asyncProperty(garbage, fc.boolean(), fc.boolean(), fc.boolean(), async (inner, wrapped, strict, stream) => {
      // Wrapped in a strict-looking root, so that the strict-mode check walks into it.
      const s = wrapped ? { type: 'object', properties: { a: inner }, required: ['a'], additionalProperties: false } : inner;
      await post('/v1/chat/completions', { model: 'm', messages, stream, tools: [{ type: 'function', function: { name: 'f', parameters: s, strict } }], tool_choice: 'required' });
      await post('/v1/chat/completions', { model: 'm', messages, stream, response_format: { type: 'json_schema', json_schema: { name: 'r', schema: s, strict } } });
      await post('/v1/messages', { model: 'm', max_tokens: 4000, messages, stream, tools: [{ name: 'f', input_schema: s }], tool_choice: { type: 'any' } });
      await post('/v1/messages', { model: 'm', max_tokens: 4000, messages, stream, output_config: { format: { type: 'json_schema', schema: s } } });
    }),
    { numRuns: 300 },
  );
  t.pass('300 garbage schemas on four routes');
});
