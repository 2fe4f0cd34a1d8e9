// The build's generated validators (ajv standalone code) are the ones in use, and they judge bodies
// exactly as validators compiled from the same schemas do.
import t from 'tap';
import { compileValidators, createBodyValidator, generatedValidators, validatorsSource } from '../../../plugins/schema-check/validate.js';

t.test('the gateway uses the generated validators', async (t) => {
  createBodyValidator();
  t.equal(validatorsSource, 'generated', 'dist/generated/body-validators.cjs matches the schemas (run `npm run build` after changing them)');
});

t.test('generated and compiled validators agree, errors included', async (t) => {
  const generated = generatedValidators();
  if (!generated) return t.fail('no generated validators: run `npm run build`');
  const compiled = compileValidators();
  const bodies: [route: 'chat' | 'messages' | 'count_tokens', body: unknown][] = [
    ['chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }],
    ['chat', { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }],
    ['chat', { model: '', messages: [], temperature: 3, n: 2, logprobs: true }],
    ['chat', { model: 'm', messages: [{ role: 'system', content: [{ type: 'image_url' }] }], tools: [{ type: 'web' }] }],
    ['messages', { model: 'm', max_tokens: 64, messages: [{ role: 'user', content: [{ type: 'tool_result' }] }] }],
    ['messages', { model: 'm', max_tokens: 0, messages: 'hi', tools: [{ name: '' }], top_k: -1 }],
    ['count_tokens', { model: 'm', messages: [{ role: 'assistant', content: [{ type: 'thinking' }] }] }],
    ['count_tokens', 42],
  ];
  for (const [route, body] of bodies) {
    for (const set of ['firstError', 'allErrors'] as const) {
      const a = generated[set][route];
      const b = compiled[set][route];
      t.equal(a(body), b(body), `${set} ${route} verdict: ${JSON.stringify(body).slice(0, 60)}`);
      t.same(a.errors ?? null, b.errors ?? null, `${set} ${route} errors`);
    }
  }
});

t.test('the config is checked by its generated validator, with the same verdicts and defaults', async (t) => {
  const { configValidatorSource } = await import('../../../lib/config.js');
  const { loadGenerated, fingerprint } = await import('../../../lib/standalone.js');
  const { readFileSync } = await import('node:fs');
  const schema = JSON.parse(readFileSync(new URL('../../../config/gateway.schema.json', import.meta.url), 'utf8'));
  const generated = loadGenerated<{ validators: { config: (d: unknown) => boolean } }>('config-validator', fingerprint(schema));
  t.ok(generated, 'dist/generated/config-validator.cjs matches config/gateway.schema.json (run `npm run build`)');
  t.match(configValidatorSource(), /exports\.fingerprint = "[0-9a-f]{64}"/, 'the build can regenerate it');
});
