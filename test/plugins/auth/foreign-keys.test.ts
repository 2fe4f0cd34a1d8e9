import t from 'tap';
import { foreignKeyMessage } from '../../../plugins/auth/foreign-keys.js';
import { ALNUM, foreignKeys, hex, random } from '../../helpers/foreign-keys.js';

t.test('a complete key of another service is named as such, and nothing of it is echoed', async (t) => {
  for (const [what, key, names] of foreignKeys) {
    const message = foreignKeyMessage(key);
    t.match(message, names, what);
    t.match(message, /not of this gateway.*sk-service-/, `${what}: says which key to send`);
    // No run of 6 characters of the key's random part appears in the answer.
    const tail = key.slice(-40);
    for (let i = 0; i + 6 <= tail.length; i++) {
      if (message!.includes(tail.slice(i, i + 6))) t.fail(`${what}: echoes "${tail.slice(i, i + 6)}"`);
    }
  }
});

t.test('placeholders, truncated keys and our own shape are not called another service\'s key', async (t) => {
  const notForeign = [
    'sk-ant-...', 'sk-ant-api03-...', `sk-ant-api03-${random(30)}`, `sk-ant-api03-${'X'.repeat(95)}`,
    'sk-proj-...', `sk-proj-${'x'.repeat(48)}`, 'sk-proj-<YOUR_KEY>', `sk-proj-${'abc'.repeat(20)}`,
    'sk-...', `sk-${'a'.repeat(48)}`, `sk-${random(40, ALNUM)}`, 'sk-or-v1-...', `sk-or-v1-${hex(40)}`,
    'AIza...', `AIza${random(20)}`, 'gsk_...', `gsk_${'0'.repeat(52)}`,
    '<ANTHROPIC_API_KEY>', '$OPENAI_API_KEY', 'sk-service-...', `sk-service-${random(40, ALNUM)}`, '',
    `sk-ant-api03-${random(93)}AA trailing`, `x${'sk-proj-'}${random(60)}`,
  ];
  for (const value of notForeign) t.equal(foreignKeyMessage(value), undefined, JSON.stringify(value.slice(0, 30)));
});
