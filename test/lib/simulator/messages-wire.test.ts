// messagesEvents writes its SSE framing itself: each event must keep the bytes formatEvent gives it.
import t from 'tap';
import { planAnswer } from '../../../lib/simulator/answer.js';
import { parseDirectives, settingsFor } from '../../../lib/simulator/directives.js';
import { messagesEvents } from '../../../lib/simulator/messages-wire.js';
import { readRequestText } from '../../../lib/simulator/request-text.js';
import { formatEvent, jsonEvent } from '../../../lib/sse.js';

const tools = [{ name: 'get', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];

for (const directive of ['words=3', 'words=0', 'thinking=1 words=2', 'tools=1', 'fault=no_usage'])
  t.test(`<<sim ${directive}>>`, async (t) => {
    const body = { model: 'm"\\ü', max_tokens: 100, messages: [{ role: 'user', content: `x\n<<sim ${directive}>>` }], tools };
    const answer = planAnswer(body, 'messages', readRequestText(body, 'messages'), settingsFor(parseDirectives(`<<sim ${directive}>>`), body.model), 7);
    const events = [...messagesEvents(answer)];
    t.ok(events.length >= 4, `${events.length} events`);
    for (const e of events) {
      const type = /^event: (\w+)\n/.exec(e)?.[1];
      const data = JSON.parse(e.slice(e.indexOf('\ndata: ') + '\ndata: '.length));
      t.equal(e, formatEvent(jsonEvent(data, type)));
    }
  });
