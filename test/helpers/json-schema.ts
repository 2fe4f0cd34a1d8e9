// Checks a JSON value against a client's JSON Schema with ajv (formats included), the way a client
// library validates structured output: draft 2020-12, or draft-07 for tuple `items` arrays.
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';

const require = createRequire(import.meta.url);
const addFormats = require('ajv-formats') as (ajv: Ajv | Ajv2020) => unknown;

const options = { strict: false, allowUnionTypes: true, validateSchema: false } as const;
const draft2020 = new Ajv2020(options);
const draft07 = new Ajv(options);
addFormats(draft2020);
addFormats(draft07);

/** ajv's error text when `value` does not validate against `schema`, undefined when it does. */
export function schemaErrors(schema: unknown, value: unknown, draft: '2020-12' | '07' = '2020-12'): string | undefined {
  const ajv = draft === '07' ? draft07 : draft2020;
  const validate = ajv.compile(schema as object);
  const ok = validate(value);
  ajv.removeSchema(schema as object);
  return ok ? undefined : ajv.errorsText(validate.errors);
}
