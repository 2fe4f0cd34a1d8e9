// bin/gateway fixes V8's old-generation growing factor before it loads anything else
// (lib/heap-growth.ts), and leaves it to an operator who passed the flag to node. Read from V8's own
// trace of every full GC (`--gc-global` makes every GC a full one).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { childEnv, gatewayBin } from '../helpers/process.js';
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from '../../lib/heap-growth.js';

/**
 * The growing factor of each full GC of the main heap while `bin/gateway --help` runs. Node 20's V8
 * prints the factor applied at the end of its "Limit:" line (its "factor" line shows the one it
 * computed, before the flag); Node 24's prints it on the "factor" line only.
 */
function factors(nodeArgs: string[]): number[] {
  const r = spawnSync(process.execPath, [...nodeArgs, '--trace-gc-verbose', '--gc-global', gatewayBin, '--help'], { encoding: 'utf8', env: childEnv(), timeout: 30_000 });
  const lines = r.stdout.split('\n').filter((l) => l.includes('[HeapController]'));
  const fromLimit = lines.flatMap((l) => /Limit: .*\((\d+\.\d)\)$/.exec(l)?.[1] ?? []);
  const fromFactor = lines.flatMap((l) => /factor (\d+\.\d) based on/.exec(l)?.[1] ?? []);
  return (fromLimit.length ? fromLimit : fromFactor).map(Number);
}

t.test('every full GC of bin/gateway once its first module loaded grows the heap by the fixed factor', async (t) => {
  const seen = factors([]);
  const fixed = 1 + HEAP_GROWING_PERCENT / 100;
  // Under --gc-global, Node's own start takes several full GCs (V8's own factors) before the import
  // resolves; from then on every one is the fixed factor.
  let fixedRun = 0;
  while (fixedRun < seen.length && seen[seen.length - 1 - fixedRun] === fixed) fixedRun++;
  t.ok(fixedRun >= 3, `the last ${fixedRun} of ${seen.join(', ')} are ${fixed}`);
});

t.test("an operator's own --heap-growing-percent stands (0: V8's own factor)", async (t) => {
  const seen = factors(['--heap-growing-percent=0']);
  t.ok(seen.length >= 3, `full GCs traced: ${seen.length}`);
  t.ok(seen.includes(4), `V8 picked ${seen.join(', ')}: its largest factor at start`);
});

t.test('heapGrowthFlag: set unless node was started with the flag, in either spelling', async (t) => {
  t.equal(heapGrowthFlag([]), `--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  t.equal(heapGrowthFlag(['--max-old-space-size=512', '--enable-source-maps']), `--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  t.equal(heapGrowthFlag(['--heap-growing-percent=50']), undefined);
  t.equal(heapGrowthFlag(['--heap_growing_percent=50']), undefined);
});
