// Seeing other processes' commits. SQLite's `PRAGMA data_version` changes for a connection exactly
// when another connection committed to the file; reading it costs no I/O.
import type { Db } from './open.js';

export class ChangeWatcher {
  /** Moves on every change that may affect cached keys, routing, accounts or credits. */
  version = 0;
  private dataVersion: number;
  private readonly read;
  private onForeign: () => void = () => {};

  constructor(db: Db) {
    this.read = db.prepare('PRAGMA data_version').pluck();
    this.dataVersion = this.read.get() as number;
  }

  /** Called (synchronously, possibly inside a write transaction) when another process committed. */
  setForeignHandler(fn: () => void): void {
    this.onForeign = fn;
  }

  check(): number {
    const v = this.read.get() as number;
    if (v !== this.dataVersion) {
      this.dataVersion = v;
      this.onForeign();
      this.version++;
    }
    return this.version;
  }

  /** This process changed something other caches may hold. */
  bump(): void {
    this.version++;
  }
}
