// A deterministic JSON value that validates against a client's JSON Schema: tool arguments and
// structured output. Covers what tool and output schemas use: type (and type lists), enum, const,
// properties/required/additionalProperties/min-/maxProperties, items/prefixItems/min-/maxItems,
// string length and common formats, number bounds and multipleOf, anyOf/oneOf (first branch),
// allOf (merged), local $ref. Not covered: pattern (a client's regex is never run: backtracking),
// not, if/then/else, contains, dependent*, patternProperties.
// The schema comes from a client, so the walk is bounded: past SOFT_DEPTH or SOFT_NODES only required
// members and minimum sizes are generated; past HARD_DEPTH a value is cut to null, past HARD_NODES
// objects and arrays stop growing; sizes are capped (a minItems of 10^9 gets MAX_ITEMS items, a
// minLength of 10^9 at most MAX_STRING characters, all strings together MAX_CHARS of padding), and
// such a value does not validate.
import { isObject } from './request-text.js';

const SOFT_DEPTH = 6;
const HARD_DEPTH = 24;
const SOFT_NODES = 300;
const HARD_NODES = 2000;
const MAX_ITEMS = 50;
const MAX_STRING = 2000;
const MAX_CHARS = 100_000;
/** $ref hops followed at one place (a → b → a must end). */
const MAX_REF_HOPS = 16;

const FORMATS: Record<string, (k: number) => string> = {
  'date-time': (k) => `2025-01-${pad(1 + (k % 28))}T12:00:00Z`,
  date: (k) => `2025-01-${pad(1 + (k % 28))}`,
  time: (k) => `12:00:${pad(k % 60)}Z`,
  duration: (k) => `P${k + 1}D`,
  email: (k) => `user${k || ''}@example.com`,
  'idn-email': (k) => `user${k || ''}@example.com`,
  hostname: (k) => `host${k || ''}.example.com`,
  'idn-hostname': (k) => `host${k || ''}.example.com`,
  ipv4: (k) => `192.0.2.${1 + (k % 254)}`,
  ipv6: (k) => `2001:db8::${(k + 1).toString(16)}`,
  uri: (k) => `https://example.com/${k || ''}`,
  'uri-reference': (k) => `/path/${k}`,
  iri: (k) => `https://example.com/${k || ''}`,
  'iri-reference': (k) => `/path/${k}`,
  url: (k) => `https://example.com/${k || ''}`,
  uuid: (k) => `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0').slice(-12)}`,
  'json-pointer': (k) => `/item/${k}`,
  regex: () => '^.*$',
};

const pad = (n: number) => String(n).padStart(2, '0');

interface Walk {
  root: unknown;
  nodes: number;
  /** Padding characters left for minLength. */
  chars: number;
}

/** Schema nodes a value may be generated from: past it, generation stops (see above). */
export const WALK_NODE_BOUND = HARD_NODES;

/**
 * A value for `schema`; a string member is "value-<its name>". `cost.nodes` (when given) is set to
 * the schema nodes visited: the walk's work, bounded whatever the schema (tests).
 */
export function valueFor(schema: unknown, name = 'value', cost?: { nodes: number }): unknown {
  const w: Walk = { root: schema, nodes: 0, chars: MAX_CHARS };
  const value = generate(w, schema, name, 0, 0);
  if (cost) cost.nodes = w.nodes;
  return value;
}

/** `k`: the index among siblings in an array, which varies scalars so that `uniqueItems` holds. */
function generate(w: Walk, raw: unknown, name: string, depth: number, k: number): unknown {
  if (++w.nodes > HARD_NODES || depth > HARD_DEPTH) return null;
  const s = flatten(w, raw, depth);
  if (s === undefined) return null; // `false`: nothing validates
  if (Object.hasOwn(s, 'const')) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[k % s.enum.length];
  const soft = depth > SOFT_DEPTH || w.nodes > SOFT_NODES;
  switch (typeOf(s)) {
    case 'object':
      return objectValue(w, s, depth, k, soft);
    case 'array':
      return arrayValue(w, s, name, depth, soft);
    case 'integer':
      return numberValue(s, k, true);
    case 'number':
      return numberValue(s, k, false);
    case 'boolean':
      return k % 2 === 0;
    case 'null':
      return null;
    default:
      return stringValue(w, s, name, k);
  }
}

/**
 * The schema to generate from, as one object: $ref followed, allOf merged into it, the first branch
 * of anyOf/oneOf merged in (a branch of type null only when it is the only one). undefined for `false`.
 */
function flatten(w: Walk, raw: unknown, depth: number): Record<string, any> | undefined {
  let s = resolve(w, raw);
  if (s === undefined) return undefined;
  for (let i = 0; i < MAX_REF_HOPS && (Array.isArray(s.allOf) || Array.isArray(s.anyOf) || Array.isArray(s.oneOf)); i++) {
    const { allOf, anyOf, oneOf, ...rest } = s;
    let merged: Record<string, any> = rest;
    for (const part of Array.isArray(allOf) ? allOf : []) {
      const p = resolve(w, part);
      if (p === undefined) return undefined;
      merged = merge(merged, p);
      if (++w.nodes > HARD_NODES || depth > HARD_DEPTH) return merged;
    }
    for (const choice of [anyOf, oneOf]) {
      if (!Array.isArray(choice) || choice.length === 0) continue;
      const branch = choice.find((b) => !isNullOnly(resolve(w, b))) ?? choice[0];
      const b = resolve(w, branch);
      if (b === undefined) return undefined;
      merged = merge(merged, b);
    }
    s = merged;
  }
  return s;
}

/** A schema object with its $ref followed (local refs only; an unknown ref allows anything). */
function resolve(w: Walk, raw: unknown): Record<string, any> | undefined {
  let s = raw;
  for (let hop = 0; hop < MAX_REF_HOPS; hop++) {
    if (s === false) return undefined;
    if (!isObject(s)) return {};
    if (typeof s.$ref !== 'string') return s;
    const { $ref, ...rest } = s;
    const target = pointer(w.root, $ref);
    if (!isObject(target) && target !== false) return rest;
    if (target === false) return undefined;
    // Keywords beside a $ref apply too (2019-09 on); they usually narrow it, so they win a clash.
    s = Object.keys(rest).length === 0 ? target : merge(target, rest);
  }
  return {};
}

function pointer(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (!isObject(at) && !Array.isArray(at)) return undefined;
    if (!Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** Both schemas' constraints at once, as far as generation needs: members and required lists are unions. */
function merge(a: Record<string, any>, b: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...a, ...b };
  if (isObject(a.properties) && isObject(b.properties)) out.properties = { ...a.properties, ...b.properties };
  if (Array.isArray(a.required) && Array.isArray(b.required)) out.required = [...new Set([...a.required, ...b.required])];
  if (a.type !== undefined && b.type !== undefined) {
    const common = types(a).filter((t) => types(b).includes(t) || (t === 'integer' && types(b).includes('number')));
    if (common.length > 0) out.type = common;
  }
  return out;
}

const types = (s: Record<string, any>): string[] => (Array.isArray(s.type) ? s.type : typeof s.type === 'string' ? [s.type] : []);

function isNullOnly(s: Record<string, any> | undefined): boolean {
  return s !== undefined && (s.type === 'null' || (Array.isArray(s.type) && s.type.length === 1 && s.type[0] === 'null') || s.const === null);
}

function typeOf(s: Record<string, any>): string {
  const listed = types(s);
  const nonNull = listed.find((t) => t !== 'null');
  if (nonNull !== undefined) return nonNull;
  if (listed.length > 0) return 'null';
  if (isObject(s.properties) || Array.isArray(s.required) || s.additionalProperties !== undefined) return 'object';
  if (s.items !== undefined || Array.isArray(s.prefixItems)) return 'array';
  if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].some((key) => typeof s[key] === 'number')) return 'number';
  return 'string';
}

function objectValue(w: Walk, s: Record<string, any>, depth: number, k: number, soft: boolean): Record<string, unknown> {
  const props: Record<string, unknown> = isObject(s.properties) ? s.properties : {};
  const required: string[] = Array.isArray(s.required) ? s.required.filter((r: unknown): r is string => typeof r === 'string') : [];
  const keys = new Set(required);
  if (!soft) for (const key of Object.keys(props)) keys.add(key);
  const extra = s.additionalProperties === false ? undefined : s.additionalProperties === true ? {} : s.additionalProperties ?? {};
  const minProps = Math.min(typeof s.minProperties === 'number' ? s.minProperties : 0, MAX_ITEMS);
  for (let i = 1; keys.size < minProps && extra !== undefined && i <= MAX_ITEMS * 2; i++) if (!Object.hasOwn(props, `extra_${i}`)) keys.add(`extra_${i}`);
  if (typeof s.maxProperties === 'number') {
    for (const key of [...keys].reverse()) if (keys.size > s.maxProperties && !required.includes(key)) keys.delete(key);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (w.nodes >= HARD_NODES) break;
    const schema = Object.hasOwn(props, key) ? props[key] : (extra ?? {});
    // defineProperty: a member named "__proto__" is a member, not the prototype.
    Object.defineProperty(out, key, { value: generate(w, schema, key, depth + 1, k), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function arrayValue(w: Walk, s: Record<string, any>, name: string, depth: number, soft: boolean): unknown[] {
  const prefix: unknown[] = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
  // Draft 2020-12: `items` is the schema after the prefix; before it, `additionalItems` was.
  const rest = Array.isArray(s.items) ? s.additionalItems : s.items;
  const min = typeof s.minItems === 'number' ? s.minItems : 0;
  const max = typeof s.maxItems === 'number' ? s.maxItems : Number.POSITIVE_INFINITY;
  let count = Math.max(min, soft ? 0 : Math.max(prefix.length, 1));
  if (rest === false) count = Math.min(count, prefix.length);
  count = Math.min(count, max, MAX_ITEMS);
  const out: unknown[] = [];
  for (let i = 0; i < count && w.nodes < HARD_NODES; i++) out.push(generate(w, i < prefix.length ? prefix[i] : (rest ?? {}), name, depth + 1, i));
  return out;
}

function numberValue(s: Record<string, any>, k: number, integer: boolean): number {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  // Draft 4 wrote exclusive bounds as booleans beside minimum/maximum.
  let lo = num(s.minimum) ?? Number.NEGATIVE_INFINITY;
  let hi = num(s.maximum) ?? Number.POSITIVE_INFINITY;
  const exLo = num(s.exclusiveMinimum) ?? (s.exclusiveMinimum === true ? num(s.minimum) : undefined);
  const exHi = num(s.exclusiveMaximum) ?? (s.exclusiveMaximum === true ? num(s.maximum) : undefined);
  const step = num(s.multipleOf) !== undefined && s.multipleOf > 0 ? s.multipleOf : integer ? 1 : undefined;
  const inside = (v: number) => v >= lo && v <= hi && (exLo === undefined || v > exLo) && (exHi === undefined || v < exHi);
  if (exLo !== undefined) lo = Math.max(lo, exLo);
  if (exHi !== undefined) hi = Math.min(hi, exHi);
  const wanted = Math.min(Math.max(42 + k, lo), hi);
  if (step === undefined) {
    if (inside(wanted)) return wanted;
    const mid = Number.isFinite(lo) && Number.isFinite(hi) ? (lo + hi) / 2 : Number.isFinite(lo) ? lo + 1 : hi - 1;
    return mid;
  }
  // Multiples of the step near the wanted value, then from each bound inwards, up to 16 steps each:
  // in floating point some multiples fail the validators' test (-1018 * 0.1 / 0.1 is not whole), so
  // one step either side is not always enough. 0 is a multiple of any step.
  const n = Math.round(wanted / step);
  const fromLo = Math.ceil(lo / step);
  const fromHi = Math.floor(hi / step);
  const candidates: number[] = [];
  for (let d = 0; d < 16; d++) candidates.push(n + d, n - d, fromLo + d, fromHi - d);
  candidates.push(0);
  for (const c of candidates) {
    const v = integer && !Number.isInteger(c * step) ? Math.round(c * step) : c * step;
    // Validators test that v / step is a whole number: in floating point, c * step / step may not be.
    if (Number.isFinite(v) && inside(v) && (!integer || Number.isInteger(v)) && Number.isInteger(v / step)) return v;
  }
  return Number.isFinite(wanted) ? wanted : 0;
}

function stringValue(w: Walk, s: Record<string, any>, name: string, k: number): string {
  const format = typeof s.format === 'string' && Object.hasOwn(FORMATS, s.format) ? FORMATS[s.format] : undefined;
  // Lengths in code points, as JSON Schema counts them.
  let chars = [...(format ? format(k) : `value-${name}${k > 0 ? `-${k + 1}` : ''}`)];
  const min = Math.min(typeof s.minLength === 'number' ? s.minLength : 0, MAX_STRING);
  const max = typeof s.maxLength === 'number' ? Math.max(s.maxLength, 0) : Number.POSITIVE_INFINITY;
  if (chars.length > max) chars = chars.slice(0, max);
  const padding = Math.min(Math.max(min - chars.length, 0), w.chars);
  w.chars -= padding;
  return chars.join('') + 'x'.repeat(padding);
}
