// Loads the operator config: YAML or JSON, ${ENV} substitution, ajv validation with every error
// named by its path, defaults filled in from the JSON Schema, cross-references checked.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocument, visit, Scalar, parse as parseYamlScalar } from 'yaml';
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { createRequire } from 'node:module';
import type { GatewayConfig } from './config-types.js';
import { packageRoot } from './package-root.js';
import { ajv2020, fingerprint, loadGenerated, moduleSource } from './standalone.js';

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

const require = createRequire(import.meta.url);
const GENERATED = 'config-validator';
const configSchema = () => JSON.parse(readFileSync(resolve(packageRoot(), 'config/gateway.schema.json'), 'utf8'));

function newAjv(schema: object, source: boolean): Ajv2020 {
  const Ajv = ajv2020();
  const { _ } = require('ajv/dist/compile/codegen/index.js') as typeof import('ajv/dist/compile/codegen/index.js');
  const addFormats = require('ajv-formats') as (ajv: Ajv2020) => Ajv2020;
  // Generated code refers to ajv-formats' checks by require, instead of inlining the functions.
  const formats = source ? { formats: _`require("ajv-formats/dist/formats").fullFormats` } : {};
  const ajv = new Ajv({ allErrors: true, useDefaults: true, multipleOfPrecision: 9, strict: false, code: { source, ...formats } });
  addFormats(ajv);
  ajv.addSchema({ ...schema, $id: 'config' });
  return ajv;
}

/** The generated module's text (written by lib/write-generated.ts). */
export function configValidatorSource(): string {
  const schema = configSchema();
  return moduleSource('lib/write-generated.ts', fingerprint(schema), { validators: { ajv: newAjv(schema, true), refs: { config: 'config' } } });
}

/** The build's generated validator when it matches the schema file, else one compiled here (kept for reloads). */
let validator: ValidateFunction | undefined;
function validate(doc: unknown) {
  if (!validator) {
    const schema = configSchema();
    validator =
      loadGenerated<{ validators: { config: ValidateFunction } }>(GENERATED, fingerprint(schema))?.validators.config ??
      newAjv(schema, false).getSchema('config')!;
  }
  validator(doc);
  return validator.errors ?? [];
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replace ${NAME} in a string value with the environment's value; an unset variable is an error
 * naming it. Done on parsed values, not the raw text, so comments are ignored and a value can never
 * change the file's syntax.
 */
function substituteEnv(value: string, env: NodeJS.ProcessEnv, problems: string[]): string {
  return value.replace(ENV_REF, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) {
      problems.push(`environment variable ${name} is not set (used as \${${name}})`);
      return '';
    }
    return v;
  });
}

function substituteJson(value: unknown, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') return substituteEnv(value, env, problems);
  if (Array.isArray(value)) return value.map((v) => substituteJson(v, env, problems));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteJson(v, env, problems)]));
  return value;
}

/** `${NAME}` is not a valid plain scalar inside YAML flow collections; parse with a stand-in. */
const STAND_IN = /_gwenv_([A-Za-z_][A-Za-z0-9_]*?)_gwenv_/g;
const WHOLE_STAND_IN = /^_gwenv_[A-Za-z_][A-Za-z0-9_]*?_gwenv_$/;

/** YAML: substitute in string scalars; an unquoted scalar that was only a reference takes the value's own type (port: ${PORT} → a number). */
function parseYamlWithEnv(text: string, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  const doc = parseDocument(text.replace(ENV_REF, '_gwenv_$1_gwenv_'));
  if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '));
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('_gwenv_')) return;
      const whole = WHOLE_STAND_IN.test(node.value);
      const v = substituteEnv(node.value.replace(STAND_IN, '$${$1}'), env, problems);
      node.value = whole && node.type === Scalar.PLAIN ? parseYamlScalar(v) : v;
    },
  });
  return doc.toJS();
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
  checkAliases(cfg.models, problems);
  checkPlugins(cfg.plugins, problems);
  chooseStorage(cfg.storage, problems);
}

export const DEFAULT_SQLITE_PATH = './data/gateway.db';

/**
 * How often writes are group-committed, by store. SQLite writes on a worker thread of its own. A
 * PostgreSQL batch is a transaction of several round trips on the event loop and a burst of the
 * database's CPU: at 1,000 streamed requests a second on two cores shared with the database, one
 * every 20 ms added 0.2 to 0.9 ms to the p50 over SQLite mode, one every 100 ms 0.13 ms at most.
 */
export const DEFAULT_COMMIT_INTERVAL_MS = { sqlite: 20, postgres: 100 };

/** One store: sqlite or postgres, never both; neither means the embedded default file. */
function chooseStorage(storage: GatewayConfig['storage'], problems: string[]): void {
  if (storage.sqlite !== undefined && storage.postgres !== undefined)
    problems.push('storage: set either sqlite (one node) or postgres (any number of nodes), not both');
  else if (storage.postgres === undefined) storage.sqlite ??= DEFAULT_SQLITE_PATH;
  storage.commit_interval_ms ??= DEFAULT_COMMIT_INTERVAL_MS[storage.postgres === undefined ? 'sqlite' : 'postgres'];
}

/** Each id or alias names one model: no alias may be a model's id or another alias (of any model). */
function checkAliases(models: GatewayConfig['models'], problems: string[]): void {
  const ids = new Map(models.map((m, i) => [m.id, i]));
  const aliases = new Map<string, string>();
  models.forEach((m, i) => {
    (m.aliases ?? []).forEach((alias, j) => {
      const at = `models[${i}].aliases[${j}]`;
      const model = ids.get(alias);
      if (model === i) problems.push(`${at}: "${alias}" is this model's own id`);
      else if (model !== undefined) problems.push(`${at}: "${alias}" is the id of models[${model}]; an alias must name one model`);
      else if (aliases.has(alias)) problems.push(`${at}: "${alias}" is already an alias (${aliases.get(alias)}); an alias must name one model`);
      else aliases.set(alias, at);
    });
  });
}

/**
 * Billing takes three plugins together: auth says whom to charge, budget-hold reserves the credit,
 * metering settles it. budget-hold or metering without the other, or without auth, would make
 * requests free; leaving out both (billing off) is fine. rate-limit limits keys, so it needs auth.
 */
function checkPlugins(plugins: string[], problems: string[]): void {
  const billing = ['budget-hold', 'metering'].filter((p) => plugins.includes(p));
  if (billing.length === 1) {
    problems.push(billing[0] === 'budget-hold'
      ? 'plugins: budget-hold without metering: holds would never be settled, so requests would be free'
      : 'plugins: metering without budget-hold: there would be no hold to settle, so requests would be free');
  }
  if (billing.length > 0 && !plugins.includes('auth'))
    problems.push(`plugins: ${billing.join(' and ')} without auth: no account to charge, so requests would be free`);
  if (plugins.includes('rate-limit') && !plugins.includes('auth'))
    problems.push('plugins: rate-limit without auth: there would be no key to limit');
  // Each step needs what the earlier ones set: the caller (auth), the body (schema-check), the
  // candidates and the token estimate (offer-pick), the key's rate (rate-limit, before any credit is
  // held), the hold (budget-hold); metering must sit nearest the upstream.
  const order = ['auth', 'schema-check', 'offer-pick', 'rate-limit', 'budget-hold'].filter((p) => plugins.includes(p));
  const positions = order.map((p) => plugins.indexOf(p));
  if (positions.some((pos, i) => i > 0 && pos < positions[i - 1]))
    problems.push(`plugins: ${order.join(', ')} must run in this order (each needs what the one before it sets)`);
  if (plugins.includes('metering') && plugins.includes('format-transform') && plugins.indexOf('metering') < plugins.indexOf('format-transform'))
    problems.push('plugins: metering must come after format-transform (it reads the upstream\'s own usage)');
}

/** Parse, substitute, validate and default a config text. Throws ConfigError listing every problem. */
export function parseConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const problems: string[] = [];
  let doc: unknown;
  try {
    doc = /\.json$/i.test(source) ? substituteJson(JSON.parse(text), env, problems) : parseYamlWithEnv(text, env, problems);
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
