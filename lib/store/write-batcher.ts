// Group commit, whatever the database: the hot path only queues rows in memory; every `intervalMs`
// one transaction writes everything queued, so a busy gateway pays one commit per interval instead
// of one per request. One batch is written at a time: when one takes longer than the interval, the
// next follows it at once with everything queued meanwhile. A crash loses the rows not yet
// committed: the batch in flight and what was queued since it started (one interval's worth while
// batches keep up). While the database refuses or stalls writes (disk full, a long lock, a
// database that is away), rows wait in memory and failed batches are retried with a growing delay;
// past a bound the ledger admits no new holds (requests get a 503), and past twice the bound
// history rows are dropped, so memory stays bounded and no money row is ever dropped. What a batch
// holds (`B`) and how it is written are the backend's (sqlite/batch.ts, postgres/batch.ts).
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log.js';
import type { BatchObserver } from './types.js';

/** Rows waiting to be written (queued or in flight) at which the ledger stops admitting new holds. */
export const MAX_UNWRITTEN_ROWS = 100_000;
/** The longest wait before retrying a failed batch. */
const MAX_RETRY_MS = 1000;
/** While batches keep failing, the log repeats it at most this often. */
const FAILING_LOG_MS = 10_000;

/** The wait before the next batch: the commit interval, doubled for each failure in a row up to MAX_RETRY_MS. */
export function retryDelayMs(intervalMs: number, failures: number): number {
  return failures === 0 ? intervalMs : Math.max(intervalMs, Math.min(MAX_RETRY_MS, intervalMs * 2 ** Math.min(failures, 16)));
}

/**
 * A source of queued rows. `take` adds what is queued to the batch (it is then in flight); exactly
 * one of `committed` or `failed` follows. After `failed` the part queues those rows again, ahead of newer ones.
 */
export interface BatchPart<B> {
  take(batch: B): void;
  committed(): void;
  failed(): void;
  /** Rows queued or in flight. */
  unwritten(): number;
}

/** Rows queued by key for the next batch, and the rows of the batch in flight (for a BatchPart). */
export class QueuedRows<K, V> {
  queued = new Map<K, V>();
  inFlight = new Map<K, V>();

  /** Hand over the queued rows: they are in flight now. */
  take(): Map<K, V> {
    this.inFlight = this.queued;
    this.queued = new Map();
    return this.inFlight;
  }

  committed(): void {
    this.inFlight = new Map();
  }

  /** Queue the rows in flight again, ahead of newer ones; a newer row for the same key wins. */
  failed(): void {
    for (const [k, v] of this.queued) this.inFlight.set(k, v);
    this.queued = this.inFlight;
    this.inFlight = new Map();
  }

  get size(): number {
    return this.queued.size + this.inFlight.size;
  }
}

/** A part whose rows are queued by key (a newer row replaces the queued one of its key); `put` adds one to a batch. */
export class KeyedRows<B, K, V> implements BatchPart<B> {
  private readonly rows = new QueuedRows<K, V>();

  constructor(private readonly batcher: WriteBatcher<B>, private readonly put: (batch: B, key: K, value: V) => void) {
    batcher.add(this);
  }

  set(key: K, value: V): void {
    this.rows.queued.set(key, value);
    this.batcher.schedule();
  }

  take(batch: B): void {
    for (const [k, v] of this.rows.take()) this.put(batch, k, v);
  }

  unwritten(): number {
    return this.rows.size;
  }

  committed(): void {
    this.rows.committed();
  }

  failed(): void {
    this.rows.failed();
  }
}

/** Runs a batch in one write transaction; resolves once it committed. */
export interface BatchExecutor<B> {
  run(batch: B): Promise<void>;
}

export interface WriteBatcherOptions {
  /** See MAX_UNWRITTEN_ROWS (tests lower it). */
  maxUnwrittenRows?: number;
  log?: Logger;
}

export class WriteBatcher<B> {
  private readonly parts: BatchPart<B>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private closed = false;
  /** The batch being written: one at a time, so rows reach the file in the order they were queued. */
  private inFlight: Promise<void> | undefined;
  private readonly maxUnwrittenRows: number;
  private readonly log: Logger;
  /** Failed batches in a row, when the first of them failed, and when the log last said so. */
  private failures = 0;
  private failingSince = 0;
  private failureLoggedAt = 0;
  /** New holds are being refused (see backlogged). */
  private refusing = false;
  private droppedRows = 0;
  private observer: BatchObserver | undefined;

  constructor(
    private readonly executor: BatchExecutor<B>,
    /** An empty batch, for the parts to fill. */
    private readonly newBatch: () => B,
    private readonly intervalMs: number,
    opts: WriteBatcherOptions = {},
  ) {
    this.maxUnwrittenRows = opts.maxUnwrittenRows ?? MAX_UNWRITTEN_ROWS;
    this.log = opts.log ?? (() => {});
  }

  add(part: BatchPart<B>): void {
    this.parts.push(part);
  }

  /** Rows waiting to be written: queued, or in the batch in flight. */
  unwritten(): number {
    let n = 0;
    for (const p of this.parts) n += p.unwritten();
    return n;
  }

  /**
   * Too many rows wait to be written (the database fails or stalls writes): the ledger admits no new
   * hold until they are. Each request would add rows that a crash could lose and memory must hold.
   */
  backlogged(): boolean {
    const unwritten = this.unwritten();
    const over = unwritten >= this.maxUnwrittenRows;
    if (over !== this.refusing) {
      this.refusing = over;
      if (over) this.log('error', 'store: too many rows wait to be written; new requests get 503 until they are', { unwritten });
      else this.log('info', 'store: the rows waiting to be written are down again; requests are admitted', { unwritten });
    }
    return over;
  }

  /** Why new requests should not come here now (readiness), or null. Reads memory only, and logs nothing. */
  problem(): string | null {
    const unwritten = this.unwritten();
    if (unwritten >= this.maxUnwrittenRows) return `store backlogged: ${unwritten} rows wait to be written (bound ${this.maxUnwrittenRows})`;
    if (this.failures > 0) return `store writes failing: ${this.failures} failed batches in a row`;
    return null;
  }

  /** Tell `observer` of every batch from now on (one at a time: the latest wins). */
  observe(observer: BatchObserver): void {
    this.observer = observer;
  }

  /**
   * Twice the bound: a part may drop rows that are not money (a history row) instead of queuing
   * them, and says so here. Open holds can still end (their rows are bounded by the open holds).
   */
  full(): boolean {
    return this.unwritten() >= 2 * this.maxUnwrittenRows;
  }

  dropped(what: string): void {
    if (this.droppedRows++ === 0) this.log('error', `store: ${what}s are being dropped: too many rows wait to be written`, { unwritten: this.unwritten() });
  }

  /**
   * Called by a part that queued something. While a batch is in flight no timer runs: its end arms
   * the next one. A timer firing meanwhile would start a flush that waits for it, one more each
   * interval for as long as the batch takes, and every one of them woken at each batch's end (under
   * callgrind's slowdown, 157 resumed awaits a streamed request: 1.72M main-thread instructions
   * a request before, 1.51M after).
   */
  schedule(): void {
    this.dirty = true;
    if (this.timer || this.closed || this.inFlight) return;
    this.arm(retryDelayMs(this.intervalMs, this.failures));
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => {}); // logged by flush, and retried
    }, ms);
  }

  /**
   * A batch ended and rows wait: the next batch one interval after this one started (at once if it
   * took longer), or after the retry delay from now when it failed.
   */
  private next(startedAt: number): void {
    if (!this.dirty || this.timer || this.closed) return;
    const ms = this.failures > 0 ? retryDelayMs(this.intervalMs, this.failures) : this.intervalMs - (performance.now() - startedAt);
    this.arm(Math.max(0, ms));
  }

  /** Write everything queued now, in one transaction; on failure the rows stay queued for a retry. */
  async flush(): Promise<void> {
    while (this.inFlight) await this.inFlight.catch(() => {});
    // After the wait: the batch that ended may have armed the timer for what this flush now takes.
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.dirty) return;
    this.dirty = false;
    const batch = this.newBatch();
    for (const p of this.parts) p.take(batch);
    const started = performance.now();
    const written = this.executor.run(batch).then(
      () => {
        this.observer?.committed((performance.now() - started) / 1000);
        for (const p of this.parts) p.committed();
        this.recovered();
      },
      (err) => {
        this.observer?.failed();
        for (const p of this.parts) p.failed();
        this.failedAgain(err);
        this.dirty = true;
        throw err;
      },
    );
    this.inFlight = written.finally(() => {
      this.inFlight = undefined;
      this.next(started);
    });
    await this.inFlight;
  }

  private failedAgain(err: unknown): void {
    const now = Date.now();
    if (this.failures++ === 0) {
      this.failingSince = now;
      this.log('error', 'store: a batch write failed; its rows stay queued and are retried', { err, unwritten: this.unwritten() });
    } else if (now - this.failureLoggedAt >= FAILING_LOG_MS) {
      this.log('error', 'store: batch writes are still failing', {
        err, failed_attempts: this.failures, seconds: Math.round((now - this.failingSince) / 1000), unwritten: this.unwritten(),
      });
    } else return;
    this.failureLoggedAt = now;
  }

  private recovered(): void {
    if (this.failures === 0 && this.droppedRows === 0) return;
    const failing = this.failures > 0 ? { failed_attempts: this.failures, seconds: Math.round((Date.now() - this.failingSince) / 1000) } : {};
    this.log('info', 'store: a batch was written after a backlog', { ...failing, dropped_rows: this.droppedRows, unwritten: this.unwritten() });
    this.failures = 0;
    this.droppedRows = 0;
  }

  /** Writes what is queued, including rows queued while its batches are written: no timer outlives it. */
  async close(): Promise<void> {
    this.closed = true;
    do await this.flush();
    while (this.dirty);
  }
}
