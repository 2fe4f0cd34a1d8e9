// What the V8 heap allocates per request, gateway against bare proxy, from each process's own GC
// trace (--trace-gc-nvp: each collection prints what was allocated since the one before, what
// survived the young generation and what was promoted). The collector's work grows with these, and
// unlike CPU time they hardly move with the machine (nine full runs on three machines:
// 67.9 to 70.6 KB a request).
// A child of its own per side, so the trace's flag costs the timed runs nothing.
import { closedLoop, keepAliveAgent, type Target } from './load.js';
import type { Child } from './procs.js';
import type { ChildOptions } from './setup.js';

export interface AllocationFigures {
  requests: number;
  /** Per request, KB (1,000 bytes). */
  allocatedKb: number;
  survivedKb: number;
  promotedKb: number;
  /** Young-generation collections (scavenges) and full ones (mark-compacts) in the window. */
  scavenges: number;
  markCompacts: number;
}

/** The bench's figures: the scenario measured, and each side's (undefined when it could not run). */
export interface HeapAllocation {
  scenario?: string;
  gateway?: AllocationFigures;
  bare?: AllocationFigures;
}

export interface GcTotals {
  allocated: number;
  survived: number;
  promoted: number;
  scavenges: number;
  markCompacts: number;
}

/** The totals of the --trace-gc-nvp lines in `text` (other lines ignored). */
export function gcTraceTotals(text: string): GcTotals {
  const totals: GcTotals = { allocated: 0, survived: 0, promoted: 0, scavenges: 0, markCompacts: 0 };
  for (const line of text.split('\n')) {
    const kind = / gc=(\w+)/.exec(line)?.[1];
    if (!kind) continue;
    const field = (name: string) => Number(new RegExp(`\\b${name}=(\\d+)`).exec(line)?.[1] ?? 0);
    totals.allocated += field('allocated');
    totals.survived += field('new_space_survived');
    totals.promoted += field('promoted');
    if (kind === 's') totals.scavenges++;
    else if (kind === 'mc') totals.markCompacts++;
  }
  return totals;
}

/**
 * Starts a child with --trace-gc-nvp (`start`), loads it at `concurrency` for `warmupMs`, then reads
 * its trace over `durationMs` of the same load. The lines of a window are those that arrive in it:
 * V8 writes them through stdout's buffer, so a few may arrive late at either end of the window.
 */
export async function measureAllocation(
  start: (opts: ChildOptions) => Promise<Child>,
  target: (child: Child) => Target,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
): Promise<AllocationFigures> {
  let pending = '';
  let trace = '';
  let collecting = false;
  const child = await start({
    nodeFlags: ['--trace-gc-nvp'],
    onStdout: (chunk) => {
      // Whole lines only, split only while collecting (a gateway also writes a line per request,
      // and this process's CPU is the load generator's), and only the trace's kept.
      const text = pending + chunk;
      const end = text.lastIndexOf('\n');
      pending = text.slice(end + 1);
      if (collecting && end > 0) for (const line of text.slice(0, end).split('\n')) if (line.includes(' gc=')) trace += line + '\n';
    },
  });
  const agent = keepAliveAgent(concurrency);
  try {
    const t = target(child);
    await closedLoop(t, agent, concurrency, warmupMs);
    collecting = true;
    const load = await closedLoop(t, agent, concurrency, durationMs);
    collecting = false;
    if (load.errors > 0) throw new Error(`${child.name}: ${load.errors} errors under load (${load.firstError})`);
    const g = gcTraceTotals(trace);
    const kb = (bytes: number) => bytes / 1000 / load.ok;
    return {
      requests: load.ok,
      allocatedKb: kb(g.allocated),
      survivedKb: kb(g.survived),
      promotedKb: kb(g.promoted),
      scavenges: g.scavenges,
      markCompacts: g.markCompacts,
    };
  } finally {
    agent.destroy();
    await child.stop();
  }
}

export function allocationReport({ scenario, gateway, bare }: HeapAllocation): string {
  const side = (name: string, f: AllocationFigures | undefined) =>
    f
      ? `${name} ${f.allocatedKb.toFixed(1)} KB (survived a scavenge ${f.survivedKb.toFixed(2)}, promoted ${f.promotedKb.toFixed(2)}; ` +
        `${f.scavenges} scavenges, ${f.markCompacts} mark-compacts over ${f.requests} requests)`
      : `${name} -`;
  return `V8 heap allocated per request (${scenario}, --trace-gc-nvp, a process of its own per side): ${side('gateway', gateway)}, ${side('bare proxy', bare)}`;
}
