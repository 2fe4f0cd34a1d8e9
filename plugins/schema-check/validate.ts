// Compiles the request body schemas once; a valid body costs one bounded walk plus ajv's generated code.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { requestSchemas, schemaDefs, type BodyRoute } from './schemas.js';
import { toProblems, type ValidationProblem } from './problems.js';

/** Validates a parsed body for a POST route: [] when valid, else its problems, most specific first. */
export type BodyValidator = (route: BodyRoute, body: unknown) => ValidationProblem[];

/**
 * Objects and arrays may nest this deep. JSON.parse takes any depth, but JSON.stringify (the proxy
 * serializes the upstream body) and recursive code overflow the stack at a few thousand levels.
 */
export const MAX_DEPTH = 128;

/**
 * Bodies with more values than this get their first problem only. With allErrors, ajv merges the
 * errors of each $ref call with Array.concat, which is quadratic in the number of errors (32,000
 * bad array items take seconds); below this size the full list costs a few milliseconds at most.
 */
export const MAX_VALUES_FOR_ALL_PROBLEMS = 2000;

const NESTED_TOO_DEEP: ValidationProblem = {
  path: '',
  message: `The request body nests objects and arrays more than ${MAX_DEPTH} levels deep`,
  keyword: 'maxDepth',
};

type Validators = Record<BodyRoute, ValidateFunction>;

function compile(allErrors: boolean): Validators {
  const ajv = new Ajv2020({
    allErrors,
    discriminator: true,
    allowUnionTypes: true,
    // errors carry their schema (for descriptions and allowed members) and value; built only on failure
    verbose: true,
  });
  const validators = {} as Validators;
  for (const route of Object.keys(requestSchemas) as BodyRoute[]) {
    validators[route] = ajv.compile({ ...requestSchemas[route].schema, $defs: schemaDefs });
  }
  return validators;
}

/** The schemas are static, so one compilation (a few hundred ms) serves every plugin instance. */
let compiled: { firstError: Validators; allErrors: Validators } | undefined;

export function createBodyValidator(): BodyValidator {
  compiled ??= { firstError: compile(false), allErrors: compile(true) };
  // The first-error validators decide; the all-errors ones only describe a rejected body.
  const { firstError, allErrors } = compiled;
  return (route, body) => {
    const values = countValues(body, MAX_DEPTH);
    if (values === TOO_DEEP) return [NESTED_TOO_DEEP];
    let validate = firstError[route];
    if (validate(body)) return [];
    if (values <= MAX_VALUES_FOR_ALL_PROBLEMS) {
      validate = allErrors[route];
      validate(body);
    }
    return toProblems(validate.errors ?? [], body);
  };
}

const TOO_DEEP = -1;

/**
 * The number of values in `value` (string contents are not read: cheap next to JSON.parse), or
 * TOO_DEEP once objects and arrays nest more than `levels` deep; the recursion is bounded by `levels`.
 */
function countValues(value: unknown, levels: number): number {
  if (typeof value !== 'object' || value === null) return 1;
  if (levels === 0) return TOO_DEEP;
  let count = 1;
  if (Array.isArray(value)) {
    for (const item of value) {
      const n = countValues(item, levels - 1);
      if (n === TOO_DEEP) return TOO_DEEP;
      count += n;
    }
  } else {
    for (const key in value) {
      const n = countValues((value as Record<string, unknown>)[key], levels - 1);
      if (n === TOO_DEEP) return TOO_DEEP;
      count += n;
    }
  }
  return count;
}
