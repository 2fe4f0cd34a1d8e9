// Self time by function and by file in a V8 .cpuprofile (what `--cpu-prof` writes, e.g. through
// GATEWAY_BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR"), as shares of the busy time (idle left
// out). Run: node dist/bench/cpuprofile-summary.js FILE.cpuprofile [--top N]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt === -1 ? 25 : Number(args[topAt + 1]);
const files = args.filter((a, i) => !a.startsWith('--') && (topAt === -1 || i !== topAt + 1));

function summarize(path: string): void {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') return;
    const dt = p.timeDeltas[i];
    busy += dt;
    const file = basename(url) || '(native)';
    const fn = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
    byFile.set(file, (byFile.get(file) ?? 0) + dt);
  });
  const show = (title: string, m: Map<string, number>, n: number) => {
    console.log(title);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`  ${((v / busy) * 100).toFixed(1).padStart(5)}%  ${k}`);
  };
  console.log(`${path}: ${(busy / 1000).toFixed(0)} ms busy`);
  show('self time by function', byFunction, top);
  show('self time by file', byFile, Math.min(top, 15));
}

for (const f of files) summarize(f);
