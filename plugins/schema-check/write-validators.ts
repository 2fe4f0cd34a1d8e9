// Build step: writes ajv's standalone code for the request body validators (see validate.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { GENERATED_VALIDATORS, validatorsModuleSource } from './validate.js';

mkdirSync(dirname(GENERATED_VALIDATORS), { recursive: true });
writeFileSync(GENERATED_VALIDATORS, validatorsModuleSource());
console.log(`wrote ${GENERATED_VALIDATORS}`);
