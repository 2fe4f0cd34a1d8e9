// detectFeatures: which optional capabilities a request uses, in either client format.
import t from 'tap';
import { detectFeatures, FEATURE_NAMES } from '../../../plugins/offer-pick/features.js';

const used = (body: Record<string, any>, format: 'chat' | 'messages') => [...detectFeatures(body, format)].sort();
const png = { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' };

t.test('nothing used', async (t) => {
  t.same(used({ messages: [{ role: 'user', content: 'hi' }] }, 'chat'), []);
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] }, 'messages'), [], 'an empty tools list');
  t.same(used({}, 'messages'), []);
});

t.test('chat format', async (t) => {
  t.same(used({ tools: [{ type: 'function', function: { name: 'f' } }] }, 'chat'), ['tools']);
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }, 'chat'), ['images']);
  t.same(used({ reasoning_effort: 'low' }, 'chat'), ['reasoning']);
  t.same(used({ reasoning_effort: 'none' }, 'chat'), [], 'reasoning_effort none is no reasoning');
  t.same(used({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, 'chat'), ['json_schema']);
  t.same(used({ response_format: { type: 'json_object' } }, 'chat'), [], 'json_object is not json_schema');
  t.same(used({ thinking: { type: 'enabled' }, output_config: { format: {} } }, 'chat'), [], 'messages-format fields mean nothing in chat');
});

t.test('messages format', async (t) => {
  t.same(used({ tools: [{ name: 'f', input_schema: {} }] }, 'messages'), ['tools']);
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'image', source: png }] }] }, 'messages'), ['images']);
  t.same(
    used({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: png }] }] }] }, 'messages'),
    ['images'],
    'an image inside a tool result',
  );
  t.same(used({ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'messages'), ['reasoning']);
  t.same(used({ thinking: { type: 'adaptive' } }, 'messages'), ['reasoning']);
  t.same(used({ thinking: { type: 'disabled' } }, 'messages'), []);
  t.same(used({ output_config: { format: { type: 'json_schema', schema: {} } } }, 'messages'), ['json_schema']);
  t.same(used({ output_config: { effort: 'low' } }, 'messages'), [], 'output_config without format');
  t.same(used({ reasoning_effort: 'high', response_format: { type: 'json_schema' } }, 'messages'), [], 'chat fields mean nothing in messages');
});

t.test('several at once; malformed parts are ignored', async (t) => {
  t.same(
    used(
      {
        tools: [{ name: 'f', input_schema: {} }],
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [null, { role: 'user', content: [null, 3, { type: 'image', source: png }] }],
      },
      'messages',
    ),
    ['images', 'reasoning', 'tools'],
  );
});

t.test('every feature has a human name', async (t) => {
  t.same(Object.keys(FEATURE_NAMES).sort(), ['images', 'json_schema', 'reasoning', 'tools']);
  for (const name of Object.values(FEATURE_NAMES)) t.ok(name.length > 0);
});
