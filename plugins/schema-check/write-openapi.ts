// Build step: writes the OpenAPI description to openapi.json at the repository root.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/package-root.js';
import { openApiDocument } from './openapi.js';

const file = join(packageRoot(), 'openapi.json');
writeFileSync(file, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log(`wrote ${file}`);
