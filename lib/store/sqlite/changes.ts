// Seeing other connections' commits. SQLite's `PRAGMA data_version` changes for a connection exactly
// when another connection committed to the file; reading it costs no I/O. Such a commit may add
// journal rows (a grant from the command line, our own writer thread's charges): the foreign
// handler reads those. Whether it changed what callers' caches hold (keys, routing, accounts) the
// change counter says, which triggers move on exactly those tables (migration 003).
import type { Db } from './open.js';

export class ChangeWatcher {
  /** Moves on every change that may affect cached keys, routing or accounts. */
  version = 0;
  private dataVersion: number;
  private counter: number;
  private readonly readDataVersion;
  private readonly readCounter;
  /** The foreign handler's reads and the counter, in one read transaction (one snapshot, one lock). */
  private readonly readForeign: () => number;
  private onForeign: () => void = () => {};

  constructor(db: Db) {
    this.readDataVersion = db.prepare('PRAGMA data_version').pluck();
    this.readCounter = db.prepare('SELECT n FROM change_counter').pluck();
    this.dataVersion = this.readDataVersion.get() as number;
    this.counter = this.readCounter.get() as number;
    this.readForeign = db.transaction(() => {
      this.onForeign();
      return this.readCounter.get() as number;
    });
  }

  /** Called (synchronously, inside a read transaction or the caller's write transaction) when another connection committed. */
  setForeignHandler(fn: () => void): void {
    this.onForeign = fn;
  }

  check(): number {
    const v = this.readDataVersion.get() as number;
    if (v !== this.dataVersion) {
      const n = this.readForeign();
      this.dataVersion = v; // after the read: one that failed is tried again at the next check
      if (n !== this.counter) {
        this.counter = n;
        this.version++;
      }
    }
    return this.version;
  }

  /** This process changed something caches may hold (its triggers moved the counter too). */
  bump(): void {
    this.counter = this.readCounter.get() as number;
    this.version++;
  }
}
