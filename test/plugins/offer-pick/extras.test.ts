// requestExtras: which fields, tools and betas of a request the upstream would bill beyond the
// offer's prices, which are unknown (dropped), and which betas are neutral.
import t from 'tap';
import { betaMatches, declares, parseBetas, requestExtras, type Allowance } from '../../../plugins/offer-pick/extras.js';

const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
const billable = (body: Record<string, any>, format: 'chat' | 'messages', betas: string[] = []) =>
  requestExtras(body, format, betas).billable.map((e) => `${e.kind}:${e.name}@${e.param}`);

t.test('billing-neutral fields real clients send pass', async (t) => {
  const chat = {
    ...base,
    max_completion_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
    user: 'u',
    store: false,
    metadata: { a: 'b' },
    parallel_tool_calls: false,
    service_tier: 'auto',
    prompt_cache_key: 'k',
    safety_identifier: 's',
    seed: 1,
    tools: [{ type: 'function', function: { name: 'f' } }],
  };
  t.same(requestExtras(chat, 'chat', []), { billable: [], unknownFields: [], gatewayFields: [], neutralBetas: [] });
  for (const tier of ['default', 'flex', null]) t.same(billable({ ...base, service_tier: tier }, 'chat'), [], `chat service_tier ${tier}`);
  const messages = {
    ...base,
    system: 's',
    metadata: { user_id: 'u' },
    thinking: { type: 'adaptive' },
    output_config: { effort: 'high' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }, { type: 'clear_tool_uses_20250919' }] },
    service_tier: 'standard_only',
    speed: 'standard',
    inference_geo: 'global',
    cache_control: { type: 'ephemeral' },
    tools: [{ name: 'f', input_schema: {} }, { type: 'custom', name: 'g' }, { type: 'bash_20250124', name: 'bash' }, { type: 'text_editor_20250728', name: 'e' }, { type: 'computer_20250124', name: 'c' }],
  };
  t.same(requestExtras(messages, 'messages', []), { billable: [], unknownFields: [], gatewayFields: [], neutralBetas: [] });
  t.same(billable({ ...base, service_tier: 'auto' }, 'messages'), []);
});

t.test('billable fields are named, in either format', async (t) => {
  t.same(billable({ ...base, service_tier: 'priority' }, 'chat'), ['field:service_tier@service_tier']);
  t.same(billable({ ...base, service_tier: 'scale' }, 'chat'), ['field:service_tier@service_tier']);
  t.same(billable({ ...base, web_search_options: {} }, 'chat'), ['field:web_search_options@web_search_options']);
  t.same(billable({ ...base, prediction: { type: 'content', content: 'x' } }, 'chat'), ['field:prediction@prediction']);
  t.same(billable({ ...base, prediction: null }, 'chat'), [], 'null asks for nothing');
  t.same(billable({ ...base, service_tier: 'priority' }, 'messages'), ['field:service_tier@service_tier']);
  t.same(billable({ ...base, speed: 'fast' }, 'messages'), ['field:speed@speed']);
  t.same(billable({ ...base, inference_geo: 'us' }, 'messages'), ['field:inference_geo@inference_geo']);
  for (const f of ['mcp_servers', 'container', 'fallbacks', 'compaction'])
    t.same(billable({ ...base, [f]: f === 'mcp_servers' ? [{ type: 'url', url: 'https://x', name: 'x' }] : {} }, 'messages'), [`field:${f}@${f}`]);
  t.same(billable({ ...base, context_management: { edits: [{ type: 'compact_20260112' }] } }, 'messages'), ['field:context_management@context_management'], 'compaction samples again');
  const [e] = requestExtras({ ...base, service_tier: 'priority' }, 'chat', []).billable;
  t.equal(e.label, 'service_tier "priority"');
});

t.test('server tools are billable, named by type and position', async (t) => {
  const tools = [{ name: 'f', input_schema: {} }, { type: 'web_search_20250305', name: 'web_search' }, { type: 'code_execution_20250825', name: 'x' }, { type: 'mcp_toolset', mcp_server_name: 'y' }];
  t.same(billable({ ...base, tools }, 'messages'), ['tool:web_search_20250305@tools[1]', 'tool:code_execution_20250825@tools[2]', 'tool:mcp_toolset@tools[3]']);
  t.same(billable({ ...base, tools: [{ type: 'computer_toolset_20260801', name: 'c' }] }, 'messages'), ['tool:computer_toolset_20260801@tools[0]'], 'not a client tool by prefix alone');
  t.same(billable({ ...base, tools: [{ type: 'web_search' }] }, 'chat'), ['tool:web_search@tools[0]'], 'chat: only function tools are the client\'s');
});

t.test('unknown top-level fields are listed to drop; the other format\'s fields are unknown', async (t) => {
  t.same(requestExtras({ ...base, some_future_field: 1, thinking: {} }, 'chat', []).unknownFields, ['some_future_field', 'thinking']);
  t.same(requestExtras({ ...base, user: 'u', diagnostics: {} }, 'messages', []).unknownFields, ['user', 'diagnostics']);
});

t.test('thread is the gateway\'s own field in the messages format (never forwarded), unknown in the chat format', async (t) => {
  for (const thread of [{ type: 'create' }, null]) {
    const x = requestExtras({ ...base, thread }, 'messages', []);
    t.same([x.gatewayFields, x.unknownFields, x.billable], [['thread'], [], []], `messages ${JSON.stringify(thread)}`);
  }
  const chat = requestExtras({ ...base, thread: { type: 'create' } }, 'chat', []);
  t.same([chat.gatewayFields, chat.unknownFields], [[], ['thread']], 'chat: dropped unless an offer declares it');
});

t.test('betas: context-1m is billable, the rest neutral', async (t) => {
  const x = requestExtras(base, 'messages', ['claude-code-20250219', 'context-1m-2025-08-07', 'made-up-2030-01-01']);
  t.same(x.billable.map((e) => [e.kind, e.name, e.param]), [['beta', 'context-1m-2025-08-07', 'anthropic-beta']]);
  t.same(x.neutralBetas, ['claude-code-20250219', 'made-up-2030-01-01']);
});

t.test('parseBetas and betaMatches', async (t) => {
  t.same(parseBetas(undefined), []);
  t.same(parseBetas(' a-1 , b-2,,a-1 '), ['a-1', 'b-2']);
  t.same(parseBetas(['a-1', 'c-3,d-4']), ['a-1', 'c-3', 'd-4']);
  t.ok(betaMatches('prompt-caching', 'prompt-caching-2024-07-31'));
  t.ok(betaMatches('prompt-caching', 'prompt-caching'));
  t.notOk(betaMatches('prompt-caching', 'prompt-cachingx-2024'));
  t.notOk(betaMatches('context', 'contextual-1'), 'a family is a whole word');
});

t.test('declares', async (t) => {
  const allow: Allowance = { fields: new Set(['service_tier']), tools: ['web_search', 'code_execution_20250825'], betas: ['context-1m'] };
  const field = (name: string) => ({ kind: 'field' as const, name, param: name, label: name });
  const tool = (name: string) => ({ kind: 'tool' as const, name, param: 'tools[0]', label: name });
  t.ok(declares(allow, field('service_tier')));
  t.notOk(declares(allow, field('mcp_servers')));
  t.ok(declares(allow, tool('web_search_20250305')), 'a tool family covers its dated versions');
  t.ok(declares(allow, tool('code_execution_20250825')));
  t.notOk(declares(allow, tool('code_execution_20250522')), 'a dated type covers only itself');
  t.ok(declares(allow, { kind: 'beta', name: 'context-1m-2025-08-07', param: 'anthropic-beta', label: '' }));
});

t.test("field names of Object's prototype are unknown fields, not rules", async (t) => {
  const body = JSON.parse('{"model":"m","messages":[],"constructor":{"prototype":{}},"toString":1,"__proto__":{"x":1}}');
  for (const format of ['chat', 'messages'] as const) {
    t.same(requestExtras(body, format, []), { billable: [], unknownFields: ['constructor', 'toString', '__proto__'], gatewayFields: [], neutralBetas: [] }, format);
  }
});
