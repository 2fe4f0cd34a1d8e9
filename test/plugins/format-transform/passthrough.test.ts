// Same-format answers keep the upstream's own text, with only the model name swapped for the client's.
import t from 'tap';
import { StreamEvent } from '../../../lib/plugin.js';
import { chatPassthrough, renamedAnswer } from '../../../plugins/format-transform/passthrough.js';

const chunk = (model: string, content: string) =>
  new StreamEvent({ data: `{"id":"c1","object":"chat.completion.chunk","model":${JSON.stringify(model)},"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}],"x":1.0}` });

t.test('a chat stream: every chunk renamed in its own text, also when the upstream model changes mid-stream', async (t) => {
  const hook = chatPassthrough('client/model "x"', true);
  for (const [up, content] of [['up-a', 'one'], ['up-a', 'two'], ['up-b\u00e9', 'three'], ['up-a', 'four']]) {
    const out = hook.onEvent(chunk(up, content)) as StreamEvent;
    t.same(JSON.parse(out.data), JSON.parse(chunk('client/model "x"', content).data), `${content}: renamed`);
    // 1.0 stays as the upstream wrote it only if the text was edited, not serialized again.
    t.ok(out.data.includes('"model":"client/model \\"x\\""') && out.data.includes('"x":1.0'), `${content}: swapped in the upstream's text`);
  }
});

t.test('a whole answer: renamed in its text, the name escaped as JSON writes it', async (t) => {
  const text = '{"id":"r1","model":"up\\"m","choices":[]}';
  const answer = renamedAnswer(text, JSON.parse(text), 'client\\model');
  t.equal(answer?.text, '{"id":"r1","model":"client\\\\model","choices":[]}');
  t.equal(renamedAnswer('{"model":"a","x":{"model":"a"}}', { model: 'a' }, 'b'), undefined, 'not where "model" appears twice');
});
