// The command line's one table: each command declares its flags and positionals here, and both the
// parser (which refuses what is not declared) and the help text are made from that declaration.
import { ArgError } from './args.js';

export interface Flag {
  /** Without the leading `--`. */
  name: string;
  /** The value's placeholder in usage lines (E, N, USD, ID,ID); absent for a switch (no value). */
  value?: string;
  required?: boolean;
  /** Checked when parsing: a positive integer, or a TCP port (0–65535). */
  number?: 'positive' | 'port';
  /** Shown in help; the command applies it. */
  default?: string;
  help: string;
}

export interface Positional {
  name: string;
  number?: 'positive';
  help: string;
}

export interface CommandSpec {
  /** The command's words, e.g. 'keys create'. */
  name: string;
  /** One line, for the list of commands and the command's help. */
  summary: string;
  flags?: Flag[];
  /** All required, in order. */
  positionals?: Positional[];
  /** Runs without loading a config file (simulate). */
  noConfig?: boolean;
}

/** What every command takes, before or after its words. */
export const globalFlags: Flag[] = [
  { name: 'config', value: 'FILE', help: 'the config file (default: $GATEWAY_CONFIG, else config/gateway.yaml)' },
  { name: 'json', help: 'machine-readable output' },
  { name: 'help', help: 'this help' },
];

export type Args = Record<string, string | boolean>;

/** A command without a config takes --help only. */
const globalsOf = (spec: CommandSpec) => (spec.noConfig ? globalFlags.filter((f) => f.name === 'help') : globalFlags);

/** `--flag value`, `--flag=value`; switches take no value; positionals as _0, _1, … Throws ArgError. */
export function parseFlags(spec: CommandSpec, argv: string[]): Args {
  // Help is shown whatever else the line holds (`keys create --acount x --help`: the user is asking how).
  if (argv.includes('--help') || argv.includes('-h')) return { help: true };
  const flags = [...(spec.flags ?? []), ...globalsOf(spec)];
  const positionals = spec.positionals ?? [];
  const args: Args = {};
  let pos = 0;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('-') && a.length > 1) {
      const eq = a.indexOf('=');
      const name = (eq === -1 ? a : a.slice(0, eq)).replace(/^--?/, '');
      const flag = flags.find((f) => f.name === name);
      if (!flag || !a.startsWith('--')) {
        const near = nearest(name, flags.map((f) => f.name));
        throw new ArgError(`unknown flag ${eq === -1 ? a : a.slice(0, eq)}${near ? ` (did you mean --${near}?)` : ''}`);
      }
      if (args[name] !== undefined) throw new ArgError(`--${name} is given twice`);
      if (!flag.value) {
        if (eq !== -1) throw new ArgError(`--${name} takes no value`);
        args[name] = true;
        continue;
      }
      let value: string;
      if (eq !== -1) value = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) value = argv[++i];
      else throw new ArgError(`--${name} needs a value (${flag.value})`);
      if (flag.number) checkNumber(value, `--${name}`, flag.number);
      args[name] = value;
      continue;
    }
    const p = positionals[pos];
    if (!p) throw new ArgError(`unexpected argument "${a}"`);
    if (p.number) checkNumber(a, p.name, p.number);
    args[`_${pos++}`] = a;
  }
  for (const f of flags) if (f.required && (args[f.name] === undefined || String(args[f.name]).trim() === '')) throw new ArgError(`--${f.name} is required`);
  if (pos < positionals.length) throw new ArgError(`${positionals[pos].name} is required`);
  return args;
}

function checkNumber(text: string, label: string, kind: 'positive' | 'port'): void {
  const n = Number(text);
  if (kind === 'positive' && !(/^\d+$/.test(text) && Number.isSafeInteger(n) && n >= 1)) {
    throw new ArgError(`${label} must be a positive integer, not "${text}"`);
  }
  if (kind === 'port' && !(/^\d+$/.test(text) && n <= 65535)) {
    throw new ArgError(`${label} must be a port number (0-65535), not "${text}"`);
  }
}

/** `gateway keys create --account E --name N [--models ID,ID]` */
export function synopsis(spec: CommandSpec): string {
  const flag = (f: Flag) => `--${f.name}${f.value ? ` ${f.value}` : ''}`;
  return ['gateway', spec.name,
    ...(spec.positionals ?? []).map((p) => p.name),
    ...(spec.flags ?? []).map((f) => (f.required ? flag(f) : `[${flag(f)}]`))].join(' ');
}

function optionLines(flags: Flag[], positionals: Positional[] = []): string[] {
  const rows = [
    ...positionals.map((p) => [p.name, p.help]),
    ...flags.map((f) => [
      `${f.name === 'help' ? '-h, ' : ''}--${f.name}${f.value ? ` ${f.value}` : ''}`,
      f.help + (f.required ? ' (required)' : '') + (f.default !== undefined ? ` (default ${f.default})` : ''),
    ]),
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

/** A command's own help: `gateway keys create --help`. */
export function commandHelp(spec: CommandSpec): string {
  const own = spec.flags ?? [];
  return [
    `usage: ${synopsis(spec)}`,
    '',
    spec.summary,
    ...(own.length || spec.positionals?.length ? ['', 'options:', ...optionLines(own, spec.positionals)] : []),
    '',
    'global options:',
    ...optionLines(globalsOf(spec)),
  ].join('\n');
}

/** The commands of a group (`gateway keys`), or of the whole program. */
export function commandList(specs: CommandSpec[]): string[] {
  const width = Math.max(...specs.map((s) => s.name.length));
  return specs.map((s) => `  gateway ${s.name.padEnd(width)}  ${s.summary}`);
}

export function generalHelp(specs: CommandSpec[]): string {
  return [
    'usage: gateway COMMAND [options]',
    '',
    'commands:',
    ...commandList(specs),
    '',
    'global options (every command):',
    ...optionLines(globalFlags),
    '',
    '`gateway COMMAND --help` shows a command\'s options.',
  ].join('\n');
}

/** The candidate closest to `word` (edit distance, or a prefix), if close enough to be a likely typo. */
export function nearest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = c.startsWith(word) && word.length >= 2 ? 1 : distance(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** Levenshtein distance, with a swap of two neighbours counting as one edit. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
