// GET /openapi.json: the request description generated from the validation schemas.
import type { PageHandler } from './server.js';
import { openApiDocument } from '../plugins/schema-check/openapi.js';

let cached: string | undefined;

export const openApiPage: PageHandler = (_req, res, path) => {
  if (path !== '/openapi.json') return false;
  cached ??= JSON.stringify(openApiDocument(), null, 2);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(cached) });
  res.end(cached);
  return true;
};
