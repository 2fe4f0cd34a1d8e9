// Waiting for an event a test cannot await directly (a notification handled, a connection noticed
// broken): the event loop gets its turns until the condition holds. Not a sleep: it returns as soon
// as the event has been handled, and fails after a bound.

/** Wait until `cond` holds; the milliseconds it took. Throws after `withinMs`. */
export async function until(what: string, cond: () => boolean, withinMs: number): Promise<number> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > withinMs) throw new Error(`not ${what} within ${withinMs} ms`);
    await new Promise((r) => setImmediate(r));
  }
  return performance.now() - start;
}

/**
 * Poll `probe` (a database read, say) until it returns a truthy value, which is returned; every
 * 50 ms, as another process changes what it reads. Throws after `withinMs`.
 */
export async function poll<T>(what: string, withinMs: number, probe: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${withinMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
