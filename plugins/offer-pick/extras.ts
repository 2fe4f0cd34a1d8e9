// What a request asks of the upstream beyond what the offer's token prices cover. Same-format traffic
// is passed through, so every top-level field and every `anthropic-beta` value is classified here:
// - neutral: forwarded (the upstream bills it as tokens it reports, at the offer's prices);
// - billable: the upstream charges more than the offer's prices (a priority tier, a web search per
//   call, tokens the gateway cannot see in the body, such as a server-side tool loop or a remote MCP
//   server's results), so only offers that declare it in `allow` may serve the request;
// - unknown: not forwarded (dropped), unless the serving offer declares it: a field the gateway does
//   not know could be billable (new vendor options often are), and format conversion drops it anyway;
// - the gateway's own: answered by the gateway and never forwarded, whatever an offer declares
//   (`thread`: the gateway holds no message threads, see schema-check's thread.ts).
import type { WireFormat } from '../../lib/config-types.js';

export type ExtraKind = 'field' | 'tool' | 'beta';

/** One billable thing a request uses: an offer must declare it in `allow.fields`, `allow.tools` or `allow.betas`. */
export interface Extra {
  kind: ExtraKind;
  /** A field name, a server tool's type, a beta. */
  name: string;
  /** The request field, for errors' `param` (a beta: `anthropic-beta`). */
  param: string;
  /** How it reads in an error message. */
  label: string;
}

/** A field value → the label of its billable use, or undefined when this value is billing-neutral. */
type FieldRule = (value: any) => string | undefined;

const neutral: FieldRule = () => undefined;
const alwaysBillable =
  (what: string): FieldRule =>
  (v) => (v === null || v === undefined ? undefined : what);
const billableUnless =
  (what: string, ...ok: unknown[]): FieldRule =>
  (v) => (v === null || v === undefined || ok.includes(v) ? undefined : `${what} ${JSON.stringify(v)}`);

/** Context edits that only remove content (cheaper); any other edit (e.g. compaction samples again) is billable. */
const CLEARING_EDIT = /^clear_(tool_uses|thinking)_\d{8}$/;
const contextManagement: FieldRule = (v) => {
  const edits = v?.edits;
  if (!Array.isArray(edits)) return undefined;
  const other = edits.find((e: any) => !(typeof e?.type === 'string' && CLEARING_EDIT.test(e.type)));
  return other === undefined ? undefined : `context_management edit ${JSON.stringify(other?.type ?? null)}`;
};

/** Fields both formats share with the same meaning; the gateway itself reads most of them. */
const COMMON: Record<string, FieldRule> = {
  model: neutral,
  messages: neutral,
  max_tokens: neutral,
  temperature: neutral,
  top_p: neutral,
  stream: neutral,
  tools: neutral, // each tool is classified by serverTools()
  tool_choice: neutral,
  metadata: neutral,
};

/** The chat-completions fields the gateway knows (openai's ChatCompletionCreateParams). */
const CHAT_FIELDS: Record<string, FieldRule> = {
  ...COMMON,
  max_completion_tokens: neutral,
  stop: neutral,
  stream_options: neutral,
  parallel_tool_calls: neutral,
  response_format: neutral,
  reasoning_effort: neutral,
  verbosity: neutral,
  user: neutral,
  safety_identifier: neutral,
  prompt_cache_key: neutral,
  store: neutral,
  seed: neutral,
  n: neutral,
  modalities: neutral,
  frequency_penalty: neutral,
  presence_penalty: neutral,
  functions: neutral,
  function_call: neutral,
  // "auto" and "default" run at the project's standard rates; "flex" is cheaper. priority/scale cost more.
  service_tier: billableUnless('service_tier', 'auto', 'default', 'flex'),
  // Web search is billed per call; rejected prediction tokens are billed as output beyond the answer.
  web_search_options: alwaysBillable('web_search_options'),
  prediction: alwaysBillable('prediction'),
};

/** The messages fields the gateway knows (@anthropic-ai/sdk's MessageCreateParams). */
const MESSAGES_FIELDS: Record<string, FieldRule> = {
  ...COMMON,
  system: neutral,
  top_k: neutral,
  stop_sequences: neutral,
  thinking: neutral,
  output_config: neutral,
  cache_control: neutral,
  context_management: contextManagement,
  // "auto" is the vendor's default when omitted; "standard_only" never uses priority capacity.
  service_tier: billableUnless('service_tier', 'auto', 'standard_only'),
  speed: billableUnless('speed', 'standard'),
  // A region pinned for inference is billed at a premium; "global" is the standard rate.
  inference_geo: billableUnless('inference_geo', 'global'),
  // Remote tools, containers, fallback models and compaction consume tokens that are not in the
  // body (the hold cannot see them) or are billed per use.
  mcp_servers: alwaysBillable('mcp_servers'),
  container: alwaysBillable('container'),
  fallbacks: alwaysBillable('fallbacks'),
  compaction: alwaysBillable('compaction'),
};

const FIELDS: Record<WireFormat, Record<string, FieldRule>> = { chat: CHAT_FIELDS, messages: MESSAGES_FIELDS };

/**
 * Fields the gateway answers itself, never forwarded: a server-held `thread` would tie the
 * conversation to one upstream. A chat client's `thread` means nothing in its format: an unknown field.
 */
const GATEWAY_FIELDS: Record<WireFormat, ReadonlySet<string>> = { chat: new Set(), messages: new Set(['thread']) };

/**
 * Tools the client executes itself: a custom tool (no type, or `custom`), and the vendor-defined
 * client tools (bash, text editor, computer use, memory). Those add a system prompt of a few hundred
 * input tokens, which the upstream reports in usage and the gateway charges at the offer's input
 * price, so they are neutral. Every other type runs at the vendor (web search, web fetch, code
 * execution, tool search, MCP toolsets, …) and is billable.
 */
const CLIENT_TOOL = /^(bash|text_editor|computer|memory)_\d{8}$/;

/** A server tool's name for `allow.tools`: its type without the date version (`web_search_20250305` → `web_search`). */
export const toolName = (type: string): string => type.replace(/_\d{8}$/, '');

function serverTools(tools: unknown, format: WireFormat): Extra[] {
  if (!Array.isArray(tools)) return [];
  const found: Extra[] = [];
  tools.forEach((tool, i) => {
    const type = tool?.type;
    const client = format === 'chat' ? type === 'function' || type === undefined : type === undefined || type === null || type === 'custom' || (typeof type === 'string' && CLIENT_TOOL.test(type));
    if (client) return;
    found.push({ kind: 'tool', name: String(type), param: `tools[${i}]`, label: `the server tool ${JSON.stringify(type)} (tools[${i}])` });
  });
  return found;
}

/**
 * Betas that by themselves make the upstream charge more than the offer's prices: the 1M-token
 * context window bills long prompts at a premium rate. Other betas only unlock body fields or
 * tools, which are classified above.
 */
export const BILLABLE_BETAS = ['context-1m'];

/** `family` names a beta and its dated versions: `prompt-caching` matches `prompt-caching-2024-07-31`. */
export const betaMatches = (family: string, beta: string): boolean => beta === family || beta.startsWith(`${family}-`);

/** The client's `anthropic-beta` values (a comma-separated list, possibly sent in several headers). */
export function parseBetas(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const parts = (Array.isArray(header) ? header.join(',') : header).split(',');
  return [...new Set(parts.map((b) => b.trim()).filter((b) => b.length > 0))];
}

/** What one request asks beyond the offer's token prices, and what may not be forwarded as is. */
export interface RequestExtras {
  /** Billable fields, tools and betas: every one must be declared by the serving offer. */
  billable: Extra[];
  /** Top-level fields the gateway does not know: dropped unless the serving offer declares them. */
  unknownFields: string[];
  /** Fields the gateway answers itself (GATEWAY_FIELDS): dropped on every attempt. */
  gatewayFields: string[];
  /** The client's betas that are not billable: forwarded when the provider's list has them. */
  neutralBetas: string[];
}

export function requestExtras(body: Record<string, any>, format: WireFormat, betas: string[]): RequestExtras {
  const rules = FIELDS[format];
  const billable: Extra[] = [];
  const unknownFields: string[] = [];
  const gatewayFields: string[] = [];
  for (const field of Object.keys(body)) {
    if (GATEWAY_FIELDS[format].has(field)) {
      gatewayFields.push(field);
      continue;
    }
    const rule = Object.hasOwn(rules, field) ? rules[field] : undefined; // not "constructor", "__proto__"…
    if (rule === undefined) {
      unknownFields.push(field);
      continue;
    }
    const label = rule(body[field]);
    if (label !== undefined) billable.push({ kind: 'field', name: field, param: field, label });
  }
  billable.push(...serverTools(body.tools, format));
  const neutralBetas: string[] = [];
  for (const beta of betas) {
    if (BILLABLE_BETAS.some((f) => betaMatches(f, beta))) billable.push({ kind: 'beta', name: beta, param: 'anthropic-beta', label: `the beta "${beta}" (anthropic-beta)` });
    else neutralBetas.push(beta);
  }
  return { billable, unknownFields, gatewayFields, neutralBetas };
}

/** What an offer declares its prices cover (offers[].allow), resolved. */
export interface Allowance {
  fields: Set<string>;
  tools: string[];
  betas: string[];
}

export function declares(allow: Allowance, extra: Extra): boolean {
  if (extra.kind === 'field') return allow.fields.has(extra.name);
  if (extra.kind === 'tool') return allow.tools.some((t) => extra.name === t || toolName(extra.name) === t);
  return allow.betas.some((f) => betaMatches(f, extra.name));
}
