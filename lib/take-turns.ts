// Requests with large bodies cost tens of milliseconds of event-loop time per step (JSON.parse,
// validation, the token estimate). Run back to back, a few of them would hold the loop for seconds
// while small requests wait. Instead they take turns, and after each step the loop is left to
// everything else for as long as the step took: large bodies get at most about half of the loop,
// and a small request waits at most one step, however many large ones are queued.
import { performance } from 'node:perf_hooks';

/** A FIFO of waiters, let through one at a time with a pause after each as long as its step. */
export class TakeTurns {
  private readonly waiting: Array<() => void> = [];
  /** A step was let through, or the pause after it lasts. */
  private busy = false;

  constructor(private readonly maxPauseMs = 1000) {}

  /**
   * Run `step` (synchronous work) when it is the caller's turn; the loop is then left to everything
   * else for as long as the step took.
   */
  async run<T>(step: () => T): Promise<T> {
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
    const started = performance.now();
    try {
      return step();
    } finally {
      setTimeout(this.idle, Math.min(performance.now() - started, this.maxPauseMs));
    }
  }

  private schedule(): void {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    setImmediate(this.next);
  }

  private readonly next = () => this.waiting.shift()!();

  private readonly idle = () => {
    this.busy = false;
    this.schedule();
  };
}

/** Bodies this large take turns for the hooks that work through the body (Plugin.bodyWork; see Chain.handle). */
export const HEAVY_BODY_BYTES = 256 * 1024;

/** The process's one lane: the event loop it protects is one per process. */
export const heavyWork = new TakeTurns();
