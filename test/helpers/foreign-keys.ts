// Keys of other services in the shapes their vendors issue, made up of random characters, for the
// tests of the auth plugin's "a key of another service" answer.
import { randomBytes } from 'node:crypto';

export const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** `n` random characters of `alphabet`, as a vendor's key generator makes them. */
export const random = (n: number, alphabet = ALNUM + '_-') => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
export const hex = (n: number) => randomBytes(n / 2).toString('hex');

/** Keys in the shapes their vendors issue today (lengths as documented or seen in the wild). */
export const foreignKeys: Array<[string, string, RegExp]> = [
  ['Anthropic API key', `sk-ant-api03-${random(93)}AA`, /an Anthropic API key \(sk-ant-api…\)/],
  ['Anthropic admin key', `sk-ant-admin01-${random(93)}AA`, /an Anthropic admin key \(sk-ant-admin…\)/],
  ['Claude OAuth token', `sk-ant-oat01-${random(95)}`, /an Anthropic \(Claude\) OAuth token/],
  ['OpenAI project key', `sk-proj-${random(74)}T3BlbkFJ${random(74)}`, /an OpenAI project key \(sk-proj-…\)/],
  ['OpenAI project key, older 48', `sk-proj-${random(48, ALNUM)}`, /an OpenAI project key/],
  ['OpenAI service account key', `sk-svcacct-${random(74)}T3BlbkFJ${random(74)}`, /an OpenAI service account key/],
  ['OpenAI admin key', `sk-admin-${random(74)}T3BlbkFJ${random(74)}`, /an OpenAI admin key/],
  ['OpenAI legacy key', `sk-${random(20, ALNUM)}T3BlbkFJ${random(20, ALNUM)}`, /an OpenAI API key \(sk-…\)/],
  ['sk- key of another vendor', `sk-${random(48, 'abcdefghijklmnopqrstuvwxyz')}`, /another OpenAI-compatible service/],
  ['OpenRouter key', `sk-or-v1-${hex(64)}`, /an OpenRouter key \(sk-or-v1-…\)/],
  ['Google API key', `AIza${random(35)}`, /a Google API key \(AIza…\)/],
  ['Groq key', `gsk_${random(52, ALNUM)}`, /a Groq API key \(gsk_…\)/],
];
