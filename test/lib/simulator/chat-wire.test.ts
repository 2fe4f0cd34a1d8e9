// chatEvents serializes each chunk's envelope once per stream: its bytes must stay those of the
// whole chunk object serialized (key order included), for every kind of delta.
import t from 'tap';
import { planAnswer } from '../../../lib/simulator/answer.js';
import { chatEvents } from '../../../lib/simulator/chat-wire.js';
import { parseDirectives, settingsFor } from '../../../lib/simulator/directives.js';
import { readRequestText } from '../../../lib/simulator/request-text.js';
import { formatEvent, jsonEvent } from '../../../lib/sse.js';

const tools = [{ type: 'function', function: { name: 'get', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

for (const directive of ['words=3', 'words=4 chunks=2', 'thinking=1 words=2', 'tools=1', 'stop=max_tokens'])
  for (const includeUsage of [false, true])
    t.test(`<<sim ${directive}>>, include_usage ${includeUsage}`, async (t) => {
      const body = { model: 'm"\\ü', messages: [{ role: 'user', content: `x <<sim ${directive}>>` }], tools };
      const answer = planAnswer(body, 'chat', readRequestText(body, 'chat'), settingsFor(parseDirectives(`<<sim ${directive}>>`), body.model), 7);
      const events = [...chatEvents(answer, includeUsage)];
      const chunks = events.filter((e) => e !== 'data: [DONE]\n\n' && !e.includes('"choices":[]'));
      t.ok(chunks.length >= 3, `${chunks.length} chunks`);
      for (const e of chunks) {
        const { delta, finish_reason } = JSON.parse(e.slice('data: '.length)).choices[0];
        const whole = {
          id: answer.id,
          object: 'chat.completion.chunk',
          created: answer.created,
          model: answer.model,
          choices: [{ index: 0, delta, logprobs: null, finish_reason }],
          ...(includeUsage ? { usage: null } : {}),
        };
        t.equal(e, formatEvent(jsonEvent(whole)));
      }
    });
