// Loads the operator config: YAML or JSON, ${ENV} substitution, ajv validation with every error
// named by its path, defaults filled in from the JSON Schema, cross-references checked.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { GatewayConfig } from './config-types.js';
import { packageRoot } from './package-root.js';

export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`${source}: invalid config:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_CONFIG_PATH = 'config/gateway.yaml';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
let validator: ReturnType<Ajv2020['compile']> | undefined;
function validate(doc: unknown) {
  if (!validator) {
    const schema = JSON.parse(readFileSync(resolve(packageRoot(), 'config/gateway.schema.json'), 'utf8'));
    const ajv = new Ajv2020({ allErrors: true, useDefaults: true, multipleOfPrecision: 9, strict: false });
    addFormats(ajv);
    validator = ajv.compile(schema);
  }
  validator(doc);
  return validator.errors ?? [];
}

/** Replace ${NAME} with the environment's value; an unset variable is an error naming it. */
function substituteEnv(text: string, env: NodeJS.ProcessEnv, problems: string[]): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) {
      problems.push(`environment variable ${name} is not set (used as \${${name}})`);
      return '';
    }
    return v;
  });
}

/** `/offers/2/price/input` → `offers[2].price.input` */
function jsonPointerToPath(ptr: string): string {
  if (!ptr) return '(top level)';
  return ptr
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

function describe(e: ErrorObject): string {
  const at = jsonPointerToPath(e.instancePath);
  switch (e.keyword) {
    case 'additionalProperties':
      return `${at}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
    case 'required':
      return `${at}: missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
    case 'enum':
      return `${at}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return `${at}: ${e.message}`;
  }
}

/** Checks the schema cannot express: references between sections and unique ids. */
function crossCheck(cfg: GatewayConfig, problems: string[]): void {
  const unique = (items: { id?: string; listing?: string }[], key: 'id' | 'listing', section: string) => {
    const seen = new Set<string>();
    items.forEach((it, i) => {
      const v = it[key] as string;
      if (seen.has(v)) problems.push(`${section}[${i}].${key}: duplicate "${v}"`);
      seen.add(v);
    });
    return seen;
  };
  const providers = unique(cfg.providers, 'id', 'providers');
  const models = unique(cfg.models, 'id', 'models');
  unique(cfg.offers, 'listing', 'offers');
  cfg.offers.forEach((o, i) => {
    if (!providers.has(o.provider)) problems.push(`offers[${i}].provider: no provider with id "${o.provider}"`);
    if (!models.has(o.model)) problems.push(`offers[${i}].model: no model with id "${o.model}"`);
  });
  cfg.models.forEach((m, i) => {
    if (m.max_output_tokens > m.context_window)
      problems.push(`models[${i}].max_output_tokens: larger than its context_window (${m.context_window})`);
  });
}

/** Parse, substitute, validate and default a config text. Throws ConfigError listing every problem. */
export function parseConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const problems: string[] = [];
  const substituted = substituteEnv(text, env, problems);
  let doc: unknown;
  try {
    doc = /\.json$/i.test(source) ? JSON.parse(substituted) : parseYaml(substituted);
  } catch (err) {
    throw new ConfigError(source, [...problems, `not valid ${/\.json$/i.test(source) ? 'JSON' : 'YAML'}: ${(err as Error).message}`]);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(source, [...problems, 'the config must be a mapping (object)']);
  for (const e of validate(doc)) problems.push(describe(e));
  if (problems.length === 0) crossCheck(doc as GatewayConfig, problems);
  if (problems.length > 0) throw new ConfigError(source, problems);
  const cfg = doc as GatewayConfig;
  cfg.source = source;
  return cfg;
}

export function configPath(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(explicit ?? env.GATEWAY_CONFIG ?? DEFAULT_CONFIG_PATH);
}

export function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [`cannot read the file: ${(err as Error).message}`]);
  }
  return parseConfig(text, path, env);
}
