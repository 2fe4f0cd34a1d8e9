// What a request asks of the answer's shape, read the same way from either wire format: which tools
// it defines, whether it forces or forbids a call (tool_choice), parallel calls, and JSON output.
import type { WireFormat } from '../config-types.js';
import { arrayOf, isObject } from './request-text.js';

export interface ToolDefinition {
  name: string;
  schema: unknown;
}

/**
 * auto: calls only when a directive asks (`tools=N`); none: never; required (chat "required",
 * messages "any"): at least one call; named: calls of that tool only.
 */
export interface ToolChoice {
  mode: 'auto' | 'none' | 'required' | 'named';
  name?: string;
  /** false: at most one call (chat `parallel_tool_calls: false`, messages `disable_parallel_tool_use`). */
  parallel: boolean;
}

export type OutputFormat = { type: 'json_object' } | { type: 'json_schema'; name: string; schema: unknown; strict: boolean };

/** The request's client tools (server tools of the messages format have a `type` and are skipped). */
export function toolDefinitions(body: Record<string, any>, format: WireFormat): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const t of arrayOf(body.tools)) {
    if (!isObject(t)) continue;
    if (format === 'messages') {
      if (typeof t.name === 'string' && (t.type === undefined || t.type === null || t.type === 'custom')) out.push({ name: t.name, schema: t.input_schema });
    } else if (t.type === 'function' && isObject(t.function) && typeof t.function.name === 'string') {
      out.push({ name: t.function.name, schema: t.function.parameters });
    }
  }
  return out;
}

export function toolChoiceOf(body: Record<string, any>, format: WireFormat): ToolChoice {
  const tc = body.tool_choice;
  if (format === 'messages') {
    const parallel = !(isObject(tc) && tc.disable_parallel_tool_use === true);
    if (!isObject(tc)) return { mode: 'auto', parallel };
    if (tc.type === 'none') return { mode: 'none', parallel };
    if (tc.type === 'any') return { mode: 'required', parallel };
    if (tc.type === 'tool') return { mode: 'named', name: String(tc.name), parallel };
    return { mode: 'auto', parallel };
  }
  const parallel = body.parallel_tool_calls !== false;
  if (tc === 'none') return { mode: 'none', parallel };
  if (tc === 'required') return { mode: 'required', parallel };
  if (isObject(tc) && tc.type === 'function' && isObject(tc.function)) return { mode: 'named', name: String(tc.function.name), parallel };
  return { mode: 'auto', parallel };
}

export const forcesCall = (choice: ToolChoice): boolean => choice.mode === 'required' || choice.mode === 'named';

/**
 * The tools this answer calls, in order: `wanted` calls (a forced choice makes at least one, a
 * non-parallel request at most one), cycling through the tools it may call.
 */
export function toolsToCall(defs: ToolDefinition[], choice: ToolChoice, wanted: number): ToolDefinition[] {
  const allowed = choice.mode === 'none' ? [] : choice.mode === 'named' ? defs.filter((d) => d.name === choice.name) : defs;
  if (allowed.length === 0) return [];
  let n = forcesCall(choice) ? Math.max(wanted, 1) : wanted;
  if (!choice.parallel) n = Math.min(n, 1);
  return Array.from({ length: n }, (_, i) => allowed[i % allowed.length]);
}

/**
 * JSON output: chat `response_format` json_object / json_schema; messages `output_config.format`
 * (and the earlier beta's top-level `output_format`), which is a JSON schema.
 */
export function outputFormatOf(body: Record<string, any>, format: WireFormat): OutputFormat | undefined {
  if (format === 'chat') {
    const rf = body.response_format;
    if (!isObject(rf)) return undefined;
    if (rf.type === 'json_object') return { type: 'json_object' };
    if (rf.type !== 'json_schema' || !isObject(rf.json_schema)) return undefined;
    const js = rf.json_schema;
    // A json_schema format without a schema asks for any JSON object.
    if (js.schema === undefined) return { type: 'json_object' };
    return { type: 'json_schema', name: String(js.name ?? 'response'), schema: js.schema, strict: js.strict === true };
  }
  const f = isObject(body.output_config) && isObject(body.output_config.format) ? body.output_config.format : body.output_format;
  if (!isObject(f) || f.type !== 'json_schema') return undefined;
  return { type: 'json_schema', name: 'output', schema: f.schema, strict: true };
}
