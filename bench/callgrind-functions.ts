// A callgrind dump's functions by self instructions, with V8's JIT code named: callgrind_annotate
// shows generated code as bare addresses ("0x000000000d189e00"), which V8's --perf-basic-prof map
// (/tmp/perf-PID.map: "START SIZE NAME" in hex, one line per code object) turns into
// "JS:*estimateInput file:///…/tokens.js:289:30" (* optimized, ^ baseline, ~ interpreted).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

interface CodeRange {
  start: number;
  end: number;
  name: string;
}

/** The map's code ranges, by start. */
function codeRanges(perfMap: string): CodeRange[] {
  const ranges: CodeRange[] = [];
  for (const line of perfMap.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) ranges.push({ start: parseInt(m[1], 16), end: parseInt(m[1], 16) + parseInt(m[2], 16), name: m[3] });
  }
  return ranges.sort((a, b) => a.start - b.start);
}

/** The range holding `address` (the map may list a reused address twice: the later code wins). */
function nameAt(ranges: CodeRange[], address: number): string | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid].start <= address) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && address < ranges[found].end ? ranges[found].name : undefined;
}

/** The `top` functions of the dump file `dump` by self instructions per request (JIT code named from the map file `perfMap`). */
export function topFunctions(dump: string, perfMap: string | undefined, requests: number, top: number): FunctionCost[] {
  const annotated = execFileSync('callgrind_annotate', ['--show=Ir', '--inclusive=no', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return costliest(annotated, perfMap === undefined ? '' : readFileSync(perfMap, 'utf8'), requests, top);
}

export interface FunctionCost {
  name: string;
  perRequest: number;
}

/** From callgrind_annotate's self costs (`--show=Ir --inclusive=no`) and the perf map's text. */
export function costliest(annotated: string, perfMap: string, requests: number, top: number): FunctionCost[] {
  const ranges = codeRanges(perfMap);
  // Code objects under one name (a function optimized again after a deopt) add up.
  const self = new Map<string, number>();
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!m || m[2].includes('PROGRAM TOTALS')) continue;
    let name = m[2].replace(/ \[[^\]]*\]$/, '').replace(/^\?\?\?:/, '');
    const address = /^0x([0-9a-f]+)/.exec(name);
    if (address) name = nameAt(ranges, parseInt(address[1], 16)) ?? 'JIT code (not in the perf map)';
    self.set(name, (self.get(name) ?? 0) + Number(m[1].replaceAll(',', '')));
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => ({ name, perRequest: n / requests }));
}

/**
 * V8's compilers' entry points from running code: tiering up (TurboFan, Sparkplug in batches) and
 * compiling a function whose bytecode was flushed. Each is entered from JS and none inside another,
 * so their inclusive costs add up without counting anything twice.
 */
const COMPILER_ENTRY = /v8::internal::(Runtime_Compile\w*|baseline::BaselineBatchCompiler::CompileBatch)\(/;

/**
 * Instructions the dump spent in V8's compilers (inclusive). After the warm-up they should be none,
 * yet a counted window still compiles (0.03 to 0.12 million instructions a request seen, in the
 * same build): V8 re-optimizes what GC flushed or a rare path deoptimized, when it happens to.
 * The count without them is the steady state's, and far steadier from run to run.
 */
export function compilerInstructions(dump: string): number {
  return compilingIn(execFileSync('callgrind_annotate', ['--show=Ir', '--inclusive=yes', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 1 << 28 }));
}

/** From callgrind_annotate's inclusive costs (`--show=Ir --inclusive=yes`). */
export function compilingIn(annotated: string): number {
  let sum = 0;
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (m && COMPILER_ENTRY.test(m[2])) sum += Number(m[1].replaceAll(',', ''));
  }
  return sum;
}
