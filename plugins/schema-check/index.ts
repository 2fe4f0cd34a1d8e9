// Request validation (spec sections 2.2, 2.3, 4 and 8): Content-Type, one JSON parse into ctx.body,
// and the route's body schema. GET routes pass untouched.
import type { Plugin, PluginEnv } from '../../lib/plugin.js';
import { EMPTY_BODY, type RequestContext } from '../../lib/context.js';
import { GatewayError, badRequest } from '../../lib/errors.js';
import { createBodyValidator } from './validate.js';
import { summarize, type ValidationProblem } from './problems.js';
import { findJsonSyntaxError } from './json-error.js';
import { checkCounts, checkValueCount } from './limits.js';
import { refuseThreadContinue } from './thread.js';

export { createBodyValidator, type BodyValidator } from './validate.js';
export type { ValidationProblem } from './problems.js';
export type { BodyRoute } from './schemas.js';
export { MAX_CONTENT_PARTS, MAX_JSON_VALUES, MAX_MESSAGES, MAX_TOOLS } from './limits.js';

/** `application/json`, with or without parameters such as charset; media types ignore case. */
const JSON_MEDIA_TYPE = /^\s*application\/json\s*(?:;|$)/i;

export default function schemaCheck(_env: PluginEnv): Plugin {
  const validateBody = createBodyValidator();
  return {
    name: 'schema-check',
    bodyWork: true,
    onRequest(ctx: RequestContext) {
      if (ctx.route === 'models') return;
      checkContentType(ctx.req.headers['content-type']);
      const text = ctx.rawBody.toString('utf8');
      checkValueCount(text);
      const body = parseBody(text);
      // Of a body refused below, the history row and the log line show the model it asked for, nothing else.
      if (typeof body.model === 'string') ctx.body = { model: body.model };
      checkCounts(body);
      refuseThreadContinue(ctx.route, body);
      const problems = validateBody(ctx.route, body);
      if (problems.length > 0) throw invalidBody(problems);
      ctx.body = body;
      // The text replaces the bytes: a request in flight keeps one copy of its body besides the parse.
      ctx.bodyText = text;
      ctx.rawBody = EMPTY_BODY;
      // count_tokens answers with one object whatever `stream` says.
      ctx.stream = ctx.route !== 'count_tokens' && body.stream === true;
    },
  };
}

function checkContentType(contentType: string | undefined): void {
  if (contentType !== undefined && JSON_MEDIA_TYPE.test(contentType)) return;
  const got = contentType === undefined ? 'none was sent' : `got ${JSON.stringify(contentType.slice(0, 100))}`;
  throw new GatewayError(
    415,
    'invalid_request_error',
    'unsupported_media_type',
    `Content-Type must be application/json (${got}).`,
  );
}

function parseBody(text: string): Record<string, any> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    if (text.trim() === '') throw badRequest('invalid_json', 'The request body is empty; send a JSON object.');
    const at = findJsonSyntaxError(text);
    const where = at
      ? `at line ${at.line}, column ${at.column} (offset ${at.offset}): ${at.reason}`
      : `(${(err as Error).message})`;
    throw badRequest('invalid_json', `The request body is not valid JSON: ${where}.`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    const got = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`;
    throw badRequest('invalid_body', `The request body must be a JSON object (got ${got}).`);
  }
  return body as Record<string, any>;
}

/** OpenAI-style codes by the kind of the first problem. */
const CODE_BY_KEYWORD: Record<string, string> = {
  required: 'missing_required_parameter',
  not: 'unsupported_parameter',
  additionalProperties: 'unknown_parameter',
  type: 'invalid_type',
};

function invalidBody(problems: ValidationProblem[]): GatewayError {
  const [first] = problems;
  return new GatewayError(400, 'invalid_request_error', CODE_BY_KEYWORD[first.keyword] ?? 'invalid_value', summarize(problems), {
    param: first.path || null,
    cause: problems,
  });
}
