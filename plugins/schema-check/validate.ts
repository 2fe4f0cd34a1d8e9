// Validates request bodies with ajv's code generated at build time (lib/standalone.ts): no schema
// compile at start and about 30 MB less memory; an outdated build falls back to compiling here.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { ajv2020, fingerprint, loadGenerated, moduleSource } from '../../lib/standalone.js';
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
/** The first-error validators decide; the all-errors ones only describe a rejected body. */
interface ValidatorSets {
  firstError: Validators;
  allErrors: Validators;
}

const ROUTES = Object.keys(requestSchemas) as BodyRoute[];
const GENERATED = 'body-validators';

function newAjv(allErrors: boolean, source: boolean): Ajv2020 {
  const Ajv = ajv2020();
  const ajv = new Ajv({
    allErrors,
    discriminator: true,
    allowUnionTypes: true,
    // errors carry their schema (for descriptions and allowed members) and value; built only on failure
    verbose: true,
    code: { source },
  });
  for (const route of ROUTES) ajv.addSchema({ ...requestSchemas[route].schema, $defs: schemaDefs, $id: route });
  return ajv;
}

const validatorsFingerprint = () => fingerprint(ROUTES.map((route) => requestSchemas[route].schema), schemaDefs);

/** The generated module's text (written by lib/write-generated.ts). */
export function bodyValidatorsSource(): string {
  const refs = Object.fromEntries(ROUTES.map((r) => [r, r]));
  return moduleSource('lib/write-generated.ts', validatorsFingerprint(), {
    firstError: { ajv: newAjv(false, true), refs },
    allErrors: { ajv: newAjv(true, true), refs },
  });
}

function compile(allErrors: boolean): Validators {
  const ajv = newAjv(allErrors, false);
  return Object.fromEntries(ROUTES.map((route) => [route, ajv.getSchema(route)!])) as Validators;
}

/** Both validator sets, compiled here (the fallback when the build's generated code is missing or outdated). */
export function compileValidators(): ValidatorSets {
  return { firstError: compile(false), allErrors: compile(true) };
}

/** The build's generated validators, if made from the current schemas. */
export const generatedValidators = () => loadGenerated<ValidatorSets>(GENERATED, validatorsFingerprint());

/** Where the validators in use came from. */
export let validatorsSource: 'generated' | 'compiled' | undefined;

/** The schemas are static, so one set of validators serves every plugin instance. */
let validators: ValidatorSets | undefined;

function loadValidators(): ValidatorSets {
  if (validators) return validators;
  const generated = generatedValidators();
  validatorsSource = generated ? 'generated' : 'compiled';
  return (validators = generated ?? compileValidators());
}

export function createBodyValidator(): BodyValidator {
  const { firstError, allErrors } = loadValidators();
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
