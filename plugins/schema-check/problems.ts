// Turns ajv's errors into problems a person can act on: the field as a path such as
// `messages[2].content[0].image_url.url`, what is wrong and what is allowed. Runs only for bodies that
// failed validation, so it may walk the body again.
import type { ErrorObject } from 'ajv';

export interface ValidationProblem {
  /** The field, e.g. `messages[2].content[0].image_url.url`; '' for the body itself. */
  path: string;
  /** What is wrong and what is allowed, without the path. */
  message: string;
  /** The ajv keyword that failed (e.g. 'required', 'type', 'not'). */
  keyword: string;
}

/** How many problems after the first one the summary names. */
const LISTED_PROBLEMS = 4;

export function toProblems(errors: readonly ErrorObject[], body: unknown): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const seen = new Set<string>();
  const specific = specificErrors(errors);
  // Never lose a rejection: if every error counted as noise, the raw first one is better than none.
  for (const error of specific.length > 0 ? specific : errors.slice(0, 1)) {
    const problem = describe(error, body);
    const key = `${problem.path}\0${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}

/** "path: message (and 2 more problems: path: message; path: message)". */
export function summarize(problems: readonly ValidationProblem[]): string {
  const [first, ...rest] = problems.map(({ path, message }) => (path ? `${path}: ${message}` : message));
  if (rest.length === 0) return `${first}.`;
  const listed = rest.slice(0, LISTED_PROBLEMS).join('; ');
  const unlisted = rest.length > LISTED_PROBLEMS ? `; and ${rest.length - LISTED_PROBLEMS} more` : '';
  return `${first} (and ${rest.length} more problem${rest.length === 1 ? '' : 's'}: ${listed}${unlisted}).`;
}

/**
 * Drops noise: discriminator errors (the tag's `enum` or `required` error says it better); missing
 * or unknown members of an object whose `type` is wrong (it is another kind of object: fixing the
 * type comes first); for anyOf the branches whose JSON type does not even fit the value, keeping
 * the errors of the branch the client meant; and an anyOf of one-member requirements ({required: [a]}
 * or {required: [b]}) missing every member becomes one "must have a or b".
 */
function specificErrors(errors: readonly ErrorObject[]): ErrorObject[] {
  const dropped = new Set<ErrorObject>();
  const typeUnions = new Map<ErrorObject, string[]>();
  const alternatives = new Map<ErrorObject, string[]>();
  const wrongKind = new Set<string>();
  for (const error of errors) {
    if (error.keyword === 'const' && error.instancePath.endsWith('/type')) wrongKind.add(error.instancePath.slice(0, -5));
  }
  for (const error of errors) {
    if ((error.keyword === 'required' || error.keyword === 'additionalProperties') && wrongKind.has(error.instancePath)) {
      dropped.add(error);
    }
    if (error.keyword === 'discriminator') dropped.add(error);
    if (error.keyword !== 'anyOf') continue;
    const prefix = `${error.schemaPath}/`;
    const branches = new Map<string, ErrorObject[]>();
    for (const other of errors) {
      if (!other.schemaPath.startsWith(prefix) || !isWithin(other.instancePath, error.instancePath)) continue;
      const branch = other.schemaPath.slice(prefix.length).split('/', 1)[0];
      const list = branches.get(branch) ?? [];
      list.push(other);
      branches.set(branch, list);
    }
    const wrongType = (branch: string, list: ErrorObject[]) =>
      list.find((e) => e.keyword === 'type' && e.instancePath === error.instancePath && e.schemaPath === `${prefix}${branch}/type`);
    const mismatched = [...branches].filter(([branch, list]) => wrongType(branch, list));
    const missing = [...branches.values()].map((list) => (list.length === 1 && list[0].keyword === 'required' && list[0].instancePath === error.instancePath ? list[0].params.missingProperty : undefined));
    if (missing.length > 1 && missing.every((m) => m !== undefined)) {
      // Each branch asks for one member ({required: [a]} or {required: [b]}): one "must have a or b".
      for (const list of branches.values()) for (const e of list) dropped.add(e);
      alternatives.set(error, missing);
    } else if (mismatched.length < branches.size) {
      dropped.add(error);
      for (const [, list] of mismatched) for (const e of list) dropped.add(e);
    } else {
      // No branch fits the value's type: one "must be a string or an object" error instead.
      for (const [, list] of branches) for (const e of list) dropped.add(e);
      typeUnions.set(error, mismatched.flatMap(([branch, list]) => String(wrongType(branch, list)!.params.type).split(',')));
    }
  }
  return errors
    .filter((e) => !dropped.has(e))
    .map((e) =>
      typeUnions.has(e) ? { ...e, keyword: 'type', params: { type: typeUnions.get(e)!.join(',') } }
      : alternatives.has(e) ? { ...e, keyword: 'required', params: { alternatives: alternatives.get(e) } }
      : e,
    );
}

const isWithin = (pointer: string, parent: string) => pointer === parent || pointer.startsWith(`${parent}/`);

function describe(error: ErrorObject, body: unknown): ValidationProblem {
  const segments = pathSegments(error.instancePath, body);
  const params = error.params as Record<string, any>;
  const value = valueAt(body, segments);
  const hint = hintOf(error);
  let message: string;
  switch (error.keyword) {
    case 'required':
      if (params.alternatives) message = `must have ${listOf(params.alternatives, 'or')}`;
      else {
        segments.push(params.missingProperty);
        message = 'is required';
      }
      break;
    case 'additionalProperties': {
      segments.push(params.additionalProperty);
      const allowed = Object.keys((error.parentSchema?.properties as object | undefined) ?? {});
      message = `is not a known field here${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`;
      break;
    }
    case 'not':
      message = 'is not supported by this gateway; remove it';
      break;
    case 'type':
      message = `must be ${listOf(String(params.type).split(',').map(withArticle), 'or')} (got ${withArticle(jsonType(value))})`;
      break;
    case 'const':
      message = `must be ${JSON.stringify(params.allowedValue)} (got ${shown(value)})`;
      break;
    case 'enum':
      message = `must be one of ${listOf(params.allowedValues.map((v: unknown) => JSON.stringify(v)), 'or')} (got ${shown(value)})`;
      break;
    case 'minLength':
      message = params.limit === 1 ? 'must be a non-empty string' : `must be at least ${params.limit} characters long`;
      break;
    case 'minItems':
      message = `must have at least ${params.limit} item${params.limit === 1 ? '' : 's'}`;
      break;
    case 'minimum':
      message = `must be at least ${params.limit} (got ${shown(value)})`;
      break;
    case 'maximum':
      message = `must be at most ${params.limit} (got ${shown(value)})`;
      break;
    case 'exclusiveMinimum':
      message = `must be greater than ${params.limit} (got ${shown(value)})`;
      break;
    default:
      message = error.message ?? `fails the "${error.keyword}" rule`;
  }
  if (hint) message += `: ${hint.charAt(0).toLowerCase()}${hint.slice(1).replace(/\.$/, '')}`;
  return { path: formatPath(segments), message, keyword: error.keyword };
}

/** A const or enum schema's description says what is allowed and why. */
function hintOf(error: ErrorObject): string | undefined {
  if (error.keyword !== 'const' && error.keyword !== 'enum') return undefined;
  const description = error.parentSchema?.description;
  return typeof description === 'string' ? description : undefined;
}

/** JSON-pointer segments, with array indices as numbers (told apart from keys such as "0" by the body). */
function pathSegments(pointer: string, body: unknown): (string | number)[] {
  if (pointer === '') return [];
  const segments: (string | number)[] = [];
  let node: any = body;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const segment = Array.isArray(node) ? Number(key) : key;
    segments.push(segment);
    node = node?.[segment];
  }
  return segments;
}

function valueAt(body: unknown, segments: readonly (string | number)[]): unknown {
  let node: any = body;
  for (const segment of segments) node = node?.[segment];
  return node;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function formatPath(segments: readonly (string | number)[]): string {
  let path = '';
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) path += path ? `.${segment}` : segment;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function withArticle(type: string): string {
  if (type === 'null') return 'null';
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** A short rendering of the offending value. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value !== null && typeof value === 'object') return withArticle(jsonType(value));
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function listOf(items: readonly string[], conjunction: string): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]}`;
}
