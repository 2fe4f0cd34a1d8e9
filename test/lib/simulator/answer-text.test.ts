// A non-stream answer's text is what its stream's deltas add up to, however they are cut.
import t from 'tap';
import { fullText, planAnswer, textDeltas } from '../../../lib/simulator/answer.js';
import { parseDirectives, settingsFor } from '../../../lib/simulator/directives.js';
import { readRequestText } from '../../../lib/simulator/request-text.js';

for (const directive of ['', 'words=1', 'words=20 chunks=20', 'words=7 chunks=3', 'words=3 chunks=10', 'bytes=3000', 'words=0']) {
  t.test(`fullText equals the joined deltas: <<sim ${directive}>>`, async (t) => {
    const body = { model: 'm', max_tokens: 100_000, messages: [{ role: 'user', content: `Question ${directive}` }] };
    const text = readRequestText(body, 'messages');
    const answer = planAnswer(body, 'messages', text, settingsFor(parseDirectives(`<<sim ${directive}>>`), 'm'), 1);
    t.equal(fullText(answer), [...textDeltas(answer)].join(''));
    t.ok(directive === 'words=0' || fullText(answer).length > 0, 'a text to compare');
  });
}
