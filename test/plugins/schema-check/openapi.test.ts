// The OpenAPI 3.1.0 description: a valid document, generated from the validation schemas.
import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { openApiDocument } from '../../../plugins/schema-check/openapi.js';

const doc = openApiDocument() as Record<string, any>;

t.test('validates as OpenAPI 3.1', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  t.same(result.errors, undefined, 'no errors');
  t.equal(result.valid, true);
  t.equal(validator.version, '3.1');
});

t.test('version, routes, security, no response schemas', async (t) => {
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.info.version, '1.0.0');
  t.same(Object.keys(doc.paths).sort(), ['/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/models', '/v1/models/{model_id}']);
  t.same(Object.keys(doc.paths['/v1/models']), ['get']);
  t.same(doc.paths['/v1/models'].get.parameters.map((p: any) => `${p.in}:${p.name}`), ['header:provider-version', 'query:limit', 'query:after_id', 'query:before_id'], 'the list documents its paging');
  t.same(Object.keys(doc.paths['/v1/models/{model_id}']), ['get']);
  t.match(doc.paths['/v1/models/{model_id}'].get.parameters[0], { name: 'model_id', in: 'path', required: true, description: /%2F/ });
  t.same(doc.components.securitySchemes, {
    bearerAuth: { type: 'http', scheme: 'bearer' },
    apiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-key' },
  });
  t.same(doc.security, [{ bearerAuth: [] }, { apiKeyAuth: [] }], 'either scheme');
  const responses = JSON.stringify(Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.responses)));
  t.notMatch(responses, /"content"|"schema"/, 'responses carry descriptions only');
  for (const [path, ref] of [
    ['/v1/chat/completions', 'ChatCompletionsRequest'],
    ['/v1/messages', 'MessagesRequest'],
    ['/v1/messages/count_tokens', 'CountTokensRequest'],
  ]) {
    t.same(doc.paths[path].post.requestBody.content['application/json'].schema, { $ref: `#/components/schemas/${ref}` }, path);
  }
});

t.test('every $ref resolves and no $defs reference is left', async (t) => {
  const text = JSON.stringify(doc);
  t.notMatch(text, /#\/\$defs\//);
  const refs = new Set([...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]));
  for (const name of refs) t.ok(doc.components.schemas[name], `${name} exists`);
});

t.test('the published schemas validate like the gateway does', async (t) => {
  const ajv = new Ajv2020({ discriminator: true, allowUnionTypes: true, strict: false });
  ajv.addSchema({ $id: 'doc', components: doc.components });
  const chat = ajv.compile({ $ref: 'doc#/components/schemas/ChatCompletionsRequest' });
  t.equal(chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), true);
  t.equal(chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], n: 2 }), false);
  const messages = ajv.compile({ $ref: 'doc#/components/schemas/MessagesRequest' });
  t.equal(messages({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] }), true);
  t.equal(messages({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), false, 'max_tokens required');
  const body = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
  for (const thread of [null, { type: 'create' }, { type: 'continue', previous_message_id: 'msg_1' }]) t.equal(messages({ ...body, thread }), true, `thread ${JSON.stringify(thread)}`);
  t.equal(messages({ ...body, thread: { type: 'continue' } }), false, 'a continue names the message it continues');
  const count = ajv.compile({ $ref: 'doc#/components/schemas/CountTokensRequest' });
  t.equal(count({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), true);
});
