// The bench's worst bodies are what they claim: within the body limit, accepted by schema-check
// (so the limits allow them), and at the count limits.
import t from 'tap';
import { fakeCtx, check } from '../plugins/schema-check/fake-ctx.js';
import { worstBodies } from '../../bench/worst-body.js';
import { MAX_CONTENT_PARTS, MAX_JSON_VALUES, MAX_MESSAGES, MAX_TOOLS } from '../../plugins/schema-check/index.js';
import { jsonValuesAtLeast } from '../../plugins/schema-check/limits.js';

t.test('each worst body is allowed by the limits, just under 10 MB or at the value limit', async (t) => {
  for (const w of worstBodies) {
    const raw = w.build(1);
    // The body at the value limit is smaller: its values, not its bytes, are the limit it reaches.
    if (w.name.includes('value limit')) t.ok(jsonValuesAtLeast(raw.toString(), Infinity) > MAX_JSON_VALUES * 0.99, `${w.name}: at the value limit`);
    else t.ok(raw.length <= 10 * 1024 * 1024 && raw.length > 9 * 1024 * 1024, `${w.name}: ${raw.length} bytes`);
    t.equal(await check(fakeCtx('messages', raw)), undefined, `${w.name}: accepted`);
    t.not(w.build(2).toString('latin1', 0, 300_000), raw.toString('latin1', 0, 300_000), `${w.name}: another seed, other text`);
  }
  const [parts, messages] = worstBodies.map((w) => JSON.parse(w.build(1).toString()));
  t.equal(parts.tools.length, MAX_TOOLS);
  t.equal(parts.messages[0].content.length, MAX_CONTENT_PARTS);
  t.equal(messages.messages.length, MAX_MESSAGES);
});
