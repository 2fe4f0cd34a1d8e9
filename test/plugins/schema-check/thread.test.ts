// Message threads: the gateway holds none. A continue is answered with the vendor's 404
// thread_not_found (on which the SDKs resend the whole conversation), before the body is judged;
// a create and a malformed thread go through the schema like any field.
import t from 'tap';
import { fakeCtx, check } from './fake-ctx.js';
import { errorBody } from '../../../lib/errors.js';

const body = (thread: unknown, extra: Record<string, unknown> = {}) => ({
  model: 'm',
  max_tokens: 10,
  messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] }],
  thread,
  ...extra,
});

t.test('a continue gets 404 thread_not_found in the vendor\'s shape, whatever else the body holds', async (t) => {
  const err = await check(fakeCtx('messages', body({ type: 'continue', previous_message_id: 'msg_01abc' })));
  t.match(err, { status: 404, type: 'not_found_error', code: 'thread_not_found', param: 'thread.previous_message_id', message: /"msg_01abc".*does not hold message threads.*whole conversation/ });
  t.same(errorBody(err!, 'messages'), {
    type: 'error',
    error: { type: 'not_found_error', message: err!.message, details: { error_code: 'thread_not_found' } },
  }, 'error.details.error_code is what the SDK reads');
  // After a pause_turn the SDK continues with no message at all: still a lost thread, not a 400.
  t.match(await check(fakeCtx('messages', body({ type: 'continue', previous_message_id: 'msg_2' }, { messages: [] }))), { status: 404, code: 'thread_not_found' });
  const long = await check(fakeCtx('messages', body({ type: 'continue', previous_message_id: 'x'.repeat(5000) })));
  t.ok(long!.message.length < 400, 'the quoted id is cut');
});

t.test('create, null and no thread are plain requests; a malformed thread is a 400 naming it', async (t) => {
  for (const thread of [{ type: 'create' }, null, undefined]) t.equal(await check(fakeCtx('messages', body(thread))), undefined, JSON.stringify(thread));
  t.match(await check(fakeCtx('messages', body({ type: 'continue' }))), { status: 400, param: 'thread', message: /previous_message_id/ });
  t.match(await check(fakeCtx('messages', body({ type: 'continue', previous_message_id: '' }))), { status: 400, param: 'thread.previous_message_id' });
  t.match(await check(fakeCtx('messages', body({ type: 'fork' }))), { status: 400, param: 'thread.type', message: /create.*continue/ });
  t.match(await check(fakeCtx('messages', body('create'))), { status: 400, param: 'thread' });
});

t.test('count_tokens and chat know no thread: not answered, left to each route\'s own rules', async (t) => {
  const cont = { type: 'continue', previous_message_id: 'msg_1' };
  t.equal(await check(fakeCtx('count_tokens', body(cont, { max_tokens: undefined }))), undefined, 'count_tokens: an unknown field (dropped)');
  t.equal(await check(fakeCtx('chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }], thread: cont })), undefined, 'chat: an unknown field (dropped)');
});
