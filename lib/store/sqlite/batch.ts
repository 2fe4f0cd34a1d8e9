// Group commit: the hot path only queues rows in memory; every `intervalMs` one transaction writes
// everything queued, so a busy gateway pays one commit per interval instead of one per request.
// A crash loses at most the batch not yet committed.
import type { Db } from './open.js';

/** A source of queued rows. `write` runs inside the batch transaction and must keep its rows
 *  until `committed` is called: a failed transaction is retried later with the same rows. */
export interface BatchPart {
  write(): void;
  committed(): void;
}

export class WriteBatcher {
  private readonly parts: BatchPart[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly intervalMs: number,
    private readonly log: (err: unknown) => void = (err) => console.error('store: batch write failed, will retry:', err),
  ) {}

  add(part: BatchPart): void {
    this.parts.push(part);
  }

  /** Called by a part that queued something. */
  schedule(): void {
    this.dirty = true;
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.flush();
      } catch (err) {
        this.log(err);
      }
    }, this.intervalMs);
  }

  /** Write everything queued now, in one transaction; on failure the rows stay queued for a retry. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.dirty) return;
    try {
      this.db.transaction(() => {
        for (const p of this.parts) p.write();
      }).immediate();
    } catch (err) {
      this.schedule();
      throw err;
    }
    this.dirty = false;
    for (const p of this.parts) p.committed();
  }

  close(): void {
    this.flush();
    this.closed = true;
  }
}
