// Keys of other services, recognised by their published shapes, so that a client configured with
// its vendor key (a common first mistake: ANTHROPIC_API_KEY or OPENAI_API_KEY left as it was) is
// told so instead of being told its complete key is "incomplete or a placeholder".
// Only complete shapes count: a prefix with dots, angle brackets or a short tail ("sk-ant-...",
// "sk-proj-xxxx") is a documentation placeholder and keeps that message. Nothing of the value
// itself is ever put into an answer; only the fixed name and prefix of its family.

interface ForeignKeyShape {
  /** Who issued it, as the answer names it. */
  service: string;
  /** The family's fixed prefix as shown to the client (never characters of the sent key). */
  shown: string;
  shape: RegExp;
}

// Random parts are matched on length and alphabet only; vendors change the details of the tail.
// Anthropic: sk-ant-api03-<93 chars>AA (108 in all), sk-ant-admin01-…, and Claude's OAuth tokens
// sk-ant-oat01-… / sk-ant-ort01-…. OpenAI: sk-proj-, sk-svcacct-, sk-admin- with 48 to 160+
// characters, and legacy user keys sk-<48>. Ordered so that a longer prefix is tried before sk-.
const SHAPES: ForeignKeyShape[] = [
  { service: 'an Anthropic API key', shown: 'sk-ant-api…', shape: /^sk-ant-api\d\d-[A-Za-z0-9_-]{80,}$/ },
  { service: 'an Anthropic admin key', shown: 'sk-ant-admin…', shape: /^sk-ant-admin\d\d-[A-Za-z0-9_-]{80,}$/ },
  { service: 'an Anthropic (Claude) OAuth token', shown: 'sk-ant-oat…', shape: /^sk-ant-o[ar]t\d\d-[A-Za-z0-9_-]{80,}$/ },
  { service: 'an OpenRouter key', shown: 'sk-or-v1-…', shape: /^sk-or-v1-[0-9a-f]{64}$/ },
  { service: 'an OpenAI project key', shown: 'sk-proj-…', shape: /^sk-proj-[A-Za-z0-9_-]{40,}$/ },
  { service: 'an OpenAI service account key', shown: 'sk-svcacct-…', shape: /^sk-svcacct-[A-Za-z0-9_-]{40,}$/ },
  { service: 'an OpenAI admin key', shown: 'sk-admin-…', shape: /^sk-admin-[A-Za-z0-9_-]{40,}$/ },
  // Legacy OpenAI user keys carry "T3BlbkFJ" (base64 of "OpenAI"); other OpenAI-compatible vendors
  // issue sk-<48+ alphanumerics> too, so without that mark the vendor is not named.
  { service: 'an OpenAI API key', shown: 'sk-…', shape: /^sk-(?=[A-Za-z0-9]*T3BlbkFJ)[A-Za-z0-9]{48,}$/ },
  { service: 'an API key of another OpenAI-compatible service', shown: 'sk-…', shape: /^sk-[A-Za-z0-9]{48,}$/ },
  { service: 'a Google API key', shown: 'AIza…', shape: /^AIza[A-Za-z0-9_-]{35}$/ },
  { service: 'a Groq API key', shown: 'gsk_…', shape: /^gsk_[A-Za-z0-9]{50,}$/ },
];

/** A random tail has many different characters; "xxxx…" or "abab…" is a placeholder of the right length. */
const TAIL = 35; // the shortest random part of the shapes above
const MIN_DISTINCT = 8;

function looksRandom(value: string): boolean {
  return new Set(value.slice(-TAIL)).size >= MIN_DISTINCT;
}

/** The 401 message for a complete key of another service, or undefined when `value` is not one. */
export function foreignKeyMessage(value: string): string | undefined {
  const found = SHAPES.find((s) => s.shape.test(value));
  if (!found || !looksRandom(value)) return undefined;
  return `The API key sent is ${found.service} (${found.shown}), a key of another service, not of this gateway. ` +
    'Send a key of this gateway instead (sk-service- followed by its random part), created in its dashboard ' +
    '(API Keys) or with `gateway keys create`, as `Authorization: Bearer <key>` or `x-api-key: <key>`.';
}
