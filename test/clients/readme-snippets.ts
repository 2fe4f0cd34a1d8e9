// The README's "Using it from your tools" section, read as the tests use it: each client's snippet
// runs as written (only the address changes), so the README cannot drift from what works.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const README_PATH = fileURLToPath(new URL('../../README.md', import.meta.url));
const SECTION = '## Using it from your tools';
/** The address the README shows; tests put the test gateway's there. */
export const README_ADDRESS = 'http://127.0.0.1:8080';
/** The key placeholder of the README's shell settings. */
export const README_KEY = 'sk-service-…';

export interface Snippet {
  lang: string;
  code: string;
}

/** The fenced code blocks of the section, in order. */
export function readmeSnippets(readme = readFileSync(README_PATH, 'utf8')): Snippet[] {
  const start = readme.indexOf(`\n${SECTION}\n`);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" section`);
  const next = readme.indexOf('\n## ', start + SECTION.length + 2);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], code: m[2] }));
}

/** The JavaScript snippet that imports `pkg` (exactly one must). */
export function snippetImporting(pkg: string, snippets = readmeSnippets()): string {
  const found = snippets.filter((s) => s.lang === 'js' && s.code.includes(`from '${pkg}'`));
  if (found.length !== 1) throw new Error(`README: ${found.length} snippets import ${pkg}, expected 1`);
  return found[0].code;
}

/** The variables the README's Claude Code block exports (the one that runs `claude`). */
export function claudeCodeSettings(snippets = readmeSnippets()): Record<string, string> {
  const block = snippets.find((s) => s.lang === 'sh' && /^claude\b/m.test(s.code));
  if (!block) throw new Error('README: no shell block that runs claude');
  const env: Record<string, string> = {};
  for (const m of block.code.matchAll(/^export (\w+)=(\S+)/gm)) env[m[1]] = m[2];
  return env;
}

/** The output budget a snippet asks for (its one max-tokens setting). */
export function budgetOf(code: string): number {
  const found = [...code.matchAll(/\b(?:max_completion_tokens|max_tokens|maxOutputTokens|maxTokens):\s*(\d+)/g)];
  if (found.length !== 1) throw new Error(`expected one output budget in the snippet, found ${found.length}`);
  return Number(found[0][1]);
}

/** The model id a snippet asks for (its one `demo/…` id). */
export function modelOf(code: string): string {
  const found = [...new Set([...code.matchAll(/'(demo\/[\w.-]+)'/g)].map((m) => m[1]))];
  if (found.length !== 1) throw new Error(`expected one model id in the snippet, found ${found.join(', ') || 'none'}`);
  return found[0];
}
