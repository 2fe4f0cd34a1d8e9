// detectFeatures: which optional capabilities a request uses, in either client format.
import t from 'tap';
import { detectFeatures, FEATURE_NAMES, findMedia } from '../../../plugins/offer-pick/features.js';

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
  t.same(Object.keys(FEATURE_NAMES).sort(), ['documents', 'images', 'json_schema', 'reasoning', 'tools']);
  for (const name of Object.values(FEATURE_NAMES)) t.ok(name.length > 0);
});

const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } };

t.test('documents: messages document blocks (tool results included) and chat file parts', async (t) => {
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, pdf] }] }, 'messages'), ['documents']);
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [pdf] }] }] }, 'messages'), ['documents']);
  t.same(used({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f' } }] }] }, 'chat'), ['documents']);
  t.same(
    used({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: png }] } }] }] }, 'messages'),
    ['documents', 'images'],
    'an image inside a document of blocks',
  );
});

t.test('findMedia: the first image and document, and the first part only its own format can carry', async (t) => {
  const at = (content: unknown[]) => findMedia({ messages: [{ role: 'user', content: 'x' }, { role: 'user', content }] });
  t.same(at([{ type: 'image', source: png }, pdf, pdf]), { image: 'messages[1].content[0]', document: 'messages[1].content[1]' }, 'base64 PDFs and images convert');
  t.same(at([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }]).formatBound, undefined, 'a text document converts');
  t.same(at([{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=' } }]).formatBound, undefined, 'a chat PDF file converts');
  t.same(at([{ type: 'file', file: { file_data: 'data:text/plain;base64,eA==' } }]).formatBound, undefined, 'a chat text file converts');
  const bound = (content: unknown[]) => at(content).formatBound;
  t.same(bound([pdf, { type: 'document', source: { type: 'url', url: 'https://x' } }]), { param: 'messages[1].content[1].source', what: 'a document given by URL' });
  t.same(bound([{ type: 'document', source: { type: 'file', file_id: 'f' } }]), { param: 'messages[1].content[0].source', what: 'a document given by file id' });
  t.same(bound([{ type: 'document', source: { type: 'base64', media_type: 'text/csv', data: 'eA==' } }]), { param: 'messages[1].content[0].source.media_type', what: 'a document of type "text/csv"' });
  t.same(bound([{ type: 'image', source: { type: 'file', file_id: 'f' } }]), { param: 'messages[1].content[0].source', what: 'an image given by file id' });
  t.same(bound([{ type: 'file', file: { file_id: 'f' } }]), { param: 'messages[1].content[0].file', what: 'a file given by file id' });
  t.same(bound([{ type: 'file', file: { file_data: 'JVBERi0=', filename: 'a.pdf' } }]), { param: 'messages[1].content[0].file.file_data', what: 'a file whose file_data is not a base64 data URL' });
  t.same(bound([{ type: 'file', file: { file_data: 'data:application/msword;base64,AA==' } }]), { param: 'messages[1].content[0].file.file_data', what: 'a file of type "application/msword"' });
  t.same(
    bound([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] } }] }]),
    { param: 'messages[1].content[0].content[0].source.content[0].source', what: 'an image given by file id' },
    'inside a tool result\'s document',
  );
});
