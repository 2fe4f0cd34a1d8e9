// Build step: writes what is generated from the schemas. openapi.json (tracked, at the repository
// root) and the ajv standalone validators under dist/generated (see standalone.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { configValidatorSource } from './config.js';
import { packageRoot } from './package-root.js';
import { generatedPath } from './standalone.js';
import { openApiDocument } from '../plugins/schema-check/openapi.js';
import { bodyValidatorsSource } from '../plugins/schema-check/validate.js';

function write(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}

write(join(packageRoot(), 'openapi.json'), `${JSON.stringify(openApiDocument(), null, 2)}\n`);
write(generatedPath('body-validators'), bodyValidatorsSource());
write(generatedPath('config-validator'), configValidatorSource());
