// A failure that can repeat thousands of times a second (the database away, a bug hit by every
// request) must not flood the log: the first of a run is logged in full, the others are counted
// and logged as one summary line per interval. The run ends at ok() (with a recovery line when
// there is one to say), or, without a recovery line, after an interval with no failure.
import type { Logger } from './log.js';

export const FAILURE_SUMMARY_MS = 60_000;

export interface FailureRunOptions {
  /** The first failure's line (error level). */
  first: string;
  /** The summary line's words, followed by the count: "…: 1234 more times in 60 s". */
  again: string;
  /** ok()'s line (info level), with the run's length in seconds; absent: runs end by going quiet. */
  recovered?: string;
  intervalMs?: number;
}

export class FailureRun {
  private since: number | undefined;
  private count = 0;
  /** When the last line of this run was logged. */
  private lastLine = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly intervalMs: number;

  constructor(
    private readonly log: Logger,
    private readonly opts: FailureRunOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? FAILURE_SUMMARY_MS;
  }

  /** `fields` and `err` are logged for the first failure of a run only. */
  failed(err: unknown, fields?: Record<string, unknown>): void {
    if (this.since !== undefined) {
      this.count++;
      return;
    }
    this.since = this.lastLine = Date.now();
    this.log('error', this.opts.first, { ...fields, err });
    this.timer = setInterval(() => this.summarise(), this.intervalMs);
    this.timer.unref();
  }

  /** The failing thing works again. */
  ok(): void {
    if (this.since === undefined) return;
    this.flush();
    if (this.opts.recovered) this.log('info', this.opts.recovered, { seconds: Math.round((Date.now() - this.since) / 1000) });
    this.end();
  }

  /** Log what is counted and stop (closing). */
  close(): void {
    this.flush();
    this.end();
  }

  private summarise(): void {
    if (this.count > 0) this.flush();
    else if (!this.opts.recovered) this.end();
  }

  private flush(): void {
    if (this.count === 0) return;
    const now = Date.now();
    const seconds = Math.round((now - this.lastLine) / 1000);
    this.log('error', `${this.opts.again}: ${this.count} more times in ${seconds} s`, { count: this.count, seconds });
    this.count = 0;
    this.lastLine = now;
  }

  private end(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.since = undefined;
    this.count = 0;
  }
}
