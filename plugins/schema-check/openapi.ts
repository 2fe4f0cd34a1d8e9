// The OpenAPI 3.1.0 description of the public API (spec sections 4, 5 and 9), generated from the
// validation schemas: request bodies only, no response schemas.
import { requestSchemas, schemaDefs, type BodyRoute, type Schema } from './schemas.js';

const DEF_PREFIX = '#/$defs/';
const COMPONENT_PREFIX = '#/components/schemas/';

/** A copy of a schema whose `$ref`s point into components/schemas instead of $defs. */
function toComponent(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toComponent);
  if (schema === null || typeof schema !== 'object') return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    copy[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith(DEF_PREFIX)
        ? COMPONENT_PREFIX + value.slice(DEF_PREFIX.length)
        : toComponent(value);
  }
  return copy;
}

const providerVersionHeader = {
  name: 'provider-version',
  in: 'header',
  required: false,
  description: 'Sent by messages-format clients. On GET /v1/models and /v1/models/{model_id} it selects the messages-format shape.',
  schema: { type: 'string', enum: ['2023-06-01'] },
};

/** The messages-format list's paging, as the vendor's (the chat-format list ignores them). */
const pageParameters = [
  { name: 'limit', in: 'query', required: false, description: 'Models per page (messages format).', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 20 } },
  { name: 'after_id', in: 'query', required: false, description: 'The page after this model ID (a last_id).', schema: { type: 'string' } },
  { name: 'before_id', in: 'query', required: false, description: 'The page before this model ID (a first_id).', schema: { type: 'string' } },
];

function postOperation(route: BodyRoute, operationId: string, summary: string, success: string, headers: object[] = []) {
  return {
    operationId,
    summary,
    ...(headers.length > 0 ? { parameters: headers } : {}),
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: COMPONENT_PREFIX + requestSchemas[route].name } } },
    },
    responses: {
      '200': { description: success },
      default: { description: 'An error in the format of the route (a JSON error body).' },
    },
  };
}

export function openApiDocument(): object {
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(schemaDefs)) schemas[name] = toComponent(schema);
  for (const { name, schema } of Object.values(requestSchemas)) schemas[name] = toComponent(schema as Schema);
  return {
    openapi: '3.1.0',
    info: {
      title: 'LLM gateway',
      version: '1.0.0',
      description:
        'Forwards inference requests in the chat-completions or the messages wire format to the cheapest usable offer ' +
        'of the requested model. Every response carries x-request-id; the serving offer is named in x-service-listing.',
    },
    security: [{ bearerAuth: [] }, { apiKeyAuth: [] }],
    paths: {
      '/v1/chat/completions': {
        post: postOperation(
          'chat',
          'createChatCompletion',
          'Chat completion (chat-completions format)',
          'The completion, or server-sent events when stream is true.',
        ),
      },
      '/v1/messages': {
        post: postOperation(
          'messages',
          'createMessage',
          'Message (messages format)',
          'The message, or server-sent events when stream is true.',
          [providerVersionHeader],
        ),
      },
      '/v1/messages/count_tokens': {
        post: postOperation(
          'count_tokens',
          'countTokens',
          'Count input tokens (messages format)',
          'An object with input_tokens. No inference charge.',
          [providerVersionHeader],
        ),
      },
      '/v1/models': {
        get: {
          operationId: 'listModels',
          summary: 'Models usable by the calling key',
          parameters: [providerVersionHeader, ...pageParameters],
          responses: {
            '200': {
              description:
                'The model list, in the format chosen by provider-version. The messages-format list is paged: ' +
                'data, has_more, first_id, last_id; the chat-format list is whole.',
            },
            default: { description: 'An error in the format chosen by provider-version (a bad paging parameter: 400).' },
          },
        },
      },
      '/v1/models/{model_id}': {
        get: {
          operationId: 'retrieveModel',
          summary: 'One model usable by the calling key',
          parameters: [
            {
              name: 'model_id',
              in: 'path',
              required: true,
              description:
                'A model ID as listed, or an alias of one (answered with the model it names). IDs contain "/": ' +
                'send it percent-encoded (%2F, as the SDKs do) or as it is.',
              schema: { type: 'string', minLength: 1 },
            },
            providerVersionHeader,
          ],
          responses: {
            '200': { description: 'The model, in the format chosen by provider-version (the same item as in the list).' },
            '404': { description: 'No such model, or not usable by this key: the format\'s own not-found error.' },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer' },
        apiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      },
      schemas,
    },
  };
}
