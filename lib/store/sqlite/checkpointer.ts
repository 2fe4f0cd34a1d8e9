// WAL checkpoints copy the WAL into the database file and fsync it. Run by SQLite on the writing
// connection (every 1000 pages by default), each one stalls the event loop for ~10 ms: the p99 of
// every request in flight. A worker thread with its own connection runs them instead, PASSIVE
// (never waiting for, nor blocking, the writer).
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import type { Db } from './open.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 5000 });
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (e) { parentPort.postMessage({ error: String(e) }); }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage('closed');
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private closing?: Promise<void>;

  /** Turns off the connection's own checkpoints and checkpoints `db`'s file every `intervalMs`. */
  constructor(db: Db, intervalMs: number, onError: (message: string) => void) {
    db.pragma('wal_autocheckpoint = 0');
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, file: db.name, intervalMs } });
    this.worker.on('message', (m: unknown) => {
      if (m && typeof m === 'object' && 'error' in m) onError(String((m as { error: string }).error));
    });
    this.worker.on('error', (e) => onError(String(e)));
    this.worker.unref(); // never keeps the process alive on its own
  }

  /** A last checkpoint, then the worker's connection closes. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.worker.ref(); // the process waits for the last checkpoint
      this.worker.once('exit', () => resolve());
      this.worker.on('message', (m) => m === 'closed' && void this.worker.terminate());
      this.worker.postMessage('close');
    });
    return this.closing;
  }
}
