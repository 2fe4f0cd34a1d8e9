// The simulator remembers its reading of the last body (lib/simulator/reading.ts): a body that
// differs, even by its directive alone, or the same text sent to the other format, is read afresh.
import t from 'tap';
import { simulatedInputTokens, startSimulator } from '../../../lib/simulator/index.js';

const sim = await startSimulator();
t.teardown(() => sim.close());

async function post(path: string, body: object): Promise<any> {
  const res = await fetch(sim.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return res.json();
}

const words = (content: string) =>
  post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content }] }).then((r) => r.choices[0].message.content.split(' ').length);

t.test('a body that differs only by its directive gets its own settings', async (t) => {
  t.equal(await words('Same question <<sim words=3>>'), 3);
  t.equal(await words('Same question <<sim words=3>>'), 3, 'the same body again');
  t.equal(await words('Same question <<sim words=5>>'), 5);
  t.equal(await words('Same question <<sim words=3>>'), 3, 'and back');
});

t.test('the same body sent to the other format is read as that format reads it', async (t) => {
  // The messages format reads the top-level system prompt; the chat format has none.
  const body = { model: 'm', max_tokens: 50, system: 'A long system prompt. '.repeat(20), messages: [{ role: 'user', content: 'Hello' }] };
  const messages = await post('/v1/messages', body);
  const chat = await post('/v1/chat/completions', body);
  t.equal(messages.usage.input_tokens, simulatedInputTokens(body, 'messages'));
  t.equal(chat.usage.prompt_tokens, simulatedInputTokens(body, 'chat'));
  t.not(messages.usage.input_tokens, chat.usage.prompt_tokens, 'the two formats read different texts');
});

t.test('a bad directive is refused every time, not only when first read', async (t) => {
  for (let i = 0; i < 2; i++) {
    const res = await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x <<sim bogus=1>>' }] });
    t.match(res, { error: { message: /Unknown simulator directive key "bogus"/ } });
  }
});
