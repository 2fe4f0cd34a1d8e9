// How far V8 lets the old generation grow between full GCs, fixed for the gateway process.
//
// After each mark-compact V8 sets the next one's threshold at live × a factor + the young
// generation, the factor picked from 1.1 to 4 by how fast the old generation was filling just then.
// Under steady load it picks 1.1. But it picks 4 at start (module loading fills it fast), and it
// can pick nearly 4 again just after an idle spell: V8 shrinks the young generation when idle, so
// its first scavenges promote every request in flight. Such a threshold holds until it is reached:
// with the gateway's ~25 MB live, the old generation filled to 75 MB of mostly dead requests before
// the next mark-compact. Four runs of cycles of 4 s of load (50 connections, billing on) and 12 to
// 15 s idle: in one, V8 took 4 (at 0.9 s, then 3.9 after an idle spell) and the peak RSS reached
// 172 MB; in the three others it took 1.1 after start, peaks 141 to 143 MB. With the factor
// fixed here every threshold was 46 to 51 MB, peak 147 MB, for 9 mark-compacts (54 ms of pauses in
// all) against 4 to 6. Bench runs: 140 to 144 MB in three of three, 145 to 182 (four over 174) in
// six before.
//
// The threshold is max(live × factor, live + 8 MB) + the young generation: at the gateway's live
// size the 8 MB step decides for any factor up to 1.3, so 1.2 bounds it as tightly as 1.1 does,
// while a much larger live heap (bodies of many requests in flight) still gets a fifth of it as room
// rather than a tenth, and fewer full GCs. `node --heap-growing-percent=0 bin/gateway` gives V8's
// own choice back.
import v8 from 'node:v8';

const FLAG = '--heap-growing-percent';
export const HEAP_GROWING_PERCENT = 20;

/** The V8 flag to set, unless the process was started with its own value (Node flags: `execArgv`). */
export function heapGrowthFlag(execArgv: readonly string[]): string | undefined {
  const own = execArgv.some((a) => a.replaceAll('_', '-').startsWith(FLAG));
  return own ? undefined : `${FLAG}=${HEAP_GROWING_PERCENT}`;
}

/**
 * Fix the factor for this process. V8 reads the flag at every full GC, so setting it at run time
 * works; it must come before the first full GC, whose threshold would otherwise stand until reached:
 * bin/gateway calls it before loading anything else.
 */
export function fixHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  const flag = heapGrowthFlag(execArgv);
  if (flag) v8.setFlagsFromString(flag);
}
