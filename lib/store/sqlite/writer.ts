// The store's worker thread, with its own connection to the file. It writes the batches the
// serving connection queues (one transaction each) and runs the WAL checkpoints. Both are the
// store's heavy work: B-tree inserts, WAL page writes, and checkpoints that copy the WAL into the
// file and fsync it (each ~10 ms). On the event loop they would add to every request's latency.
// Checkpoints are PASSIVE: they never wait for, nor block, a writer.
// The thread runs at a lower CPU priority (nice +10; Linux, where a thread has its own): nothing
// waits for it, but at normal priority its wake-up for each batch could take the core from the
// event loop mid-request. Measured on 2 cores under load: posting a batch cost 2 to 12 µs per
// request, and the event loop's CPU per request fell by 6 to 14 µs at nice +10. When the cores
// are saturated it gets less CPU; batches then grow (one is in flight at a time), each row costs
// less, and it keeps up at a higher weight than +19 would give it.
// It is also a batch thread (SCHED_BATCH, set with util-linux's `chrt`; Node has no call for it):
// the same share of the CPU, but its wake-up never preempts a running thread. At nice +10 alone,
// woken by the post of a batch it still took the event loop's core at once: at 1,000 req/s, a
// quarter to a third of the posts (242 of 708, 186 of 706) came back after ~0.3 ms with the event
// loop switched out meanwhile, against 9 of 711 and 10 of 713 as a batch thread (the main
// thread's involuntary context switches around postMessage, 12 s of plain requests each).
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import type { BatchExecutor } from '../write-batcher.js';
import { BATCH_SQL, batchWriter, type Batch } from './batch.js';
import type { Db } from './open.js';

/** The writer thread's nice value (0 is normal, 19 the lowest priority). */
export const WRITER_NICE = 10;

/**
 * The writer connection's page cache, KiB. better-sqlite3 builds SQLite with 16 MB per connection
 * (SQLITE_DEFAULT_CACHE_SIZE=-16000), and under load the writer's cache filled it: its thread's
 * malloc arena held 20 MB. Its batches append to the right edges of the tables and indexes (ids and
 * times only grow), so a few hundred pages hold what it touches; what it evicts is still in the
 * OS's page cache. Measured at 8,000 req/s (10 s runs at 50 in flight): the thread's arena held 4 MB
 * instead of 20 at the end of every run, the median peak RSS fell by about 10 MB, and the writer's
 * CPU per request did not change measurably.
 */
export const WRITER_CACHE_KIB = 2048;

/**
 * The writer isolate's V8 limits. Its garbage is the batches it is sent (cloned, bound, dropped);
 * without a bound its young generation could grow like the main thread's (to 48 MB) when batches
 * grow. The old generation is left unbounded: after a stall, a backlog of 100,000 rows goes to it
 * in one batch, and a V8 heap limit would kill the thread.
 */
export const WRITER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 4 };

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
let policy = 'other';
if (process.platform === 'linux') {
  try {
    const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
    require('node:os').setPriority(tid, workerData.nice);
    try {
      require('node:child_process').execFileSync('chrt', ['--batch', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 5000 });
      policy = 'batch';
    } catch (e) {
      // Without chrt (a minimal image) the thread stays at its nice value alone.
      if (e.code !== 'ENOENT') parentPort.postMessage({ warning: 'could not make the writer thread a batch thread: ' + e });
    }
  } catch (e) {
    parentPort.postMessage({ warning: 'could not lower the writer thread priority: ' + e });
  }
}
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 5000 });
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('wal_autocheckpoint = 0');
db.pragma('cache_size = -' + workerData.cacheKib);
const write = (${batchWriter.toString()})(db, workerData.sql);
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (e) { parentPort.postMessage({ warning: 'WAL checkpoint failed: ' + e }); }
};
const timer = setInterval(checkpoint, workerData.checkpointMs);
parentPort.on('message', (m) => {
  if (m.settings) {
    const { resourceLimits } = require('node:worker_threads');
    parentPort.postMessage({ settings: { cacheKib: -db.pragma('cache_size', { simple: true }), resourceLimits, policy } });
    return;
  }
  if (m.batch) {
    try {
      write(m.batch);
      parentPort.postMessage({ id: m.id });
    } catch (e) {
      parentPort.postMessage({ id: m.id, error: String(e && e.stack || e) });
    }
    return;
  }
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage({ closed: true });
});
`;

/** What the writer thread runs with, as it reports it (see StoreWriter.settings). */
export interface WriterSettings {
  /** Its connection's page cache. */
  cacheKib: number;
  /** Its isolate's V8 limits. */
  resourceLimits: { maxYoungGenerationSizeMb: number; maxOldGenerationSizeMb: number };
  /** Its scheduling policy: 'batch' where it could be set (Linux, with chrt), else 'other'. */
  policy: 'batch' | 'other';
}

interface Reply {
  id?: number;
  settings?: WriterSettings;
  error?: string;
  warning?: string;
  closed?: boolean;
}

export class StoreWriter implements BatchExecutor<Batch> {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(): void; reject(e: Error): void }>();
  private nextId = 0;
  private closing?: Promise<void>;
  private dead?: Error;

  /** Turns off `db`'s own checkpoints: the worker checkpoints the file every `checkpointMs`. */
  constructor(db: Db, checkpointMs: number, onWarning: (message: string) => void) {
    db.pragma('wal_autocheckpoint = 0');
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, file: db.name, checkpointMs, sql: BATCH_SQL, nice: WRITER_NICE, cacheKib: WRITER_CACHE_KIB },
      resourceLimits: WRITER_RESOURCE_LIMITS,
    });
    this.worker.on('message', (m: Reply) => {
      if (m.warning) return onWarning(m.warning);
      if (m.id === undefined) return;
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error) w?.reject(new Error(`batch write failed: ${m.error}`));
      else w?.resolve();
    });
    this.worker.on('error', (e) => this.fail(e));
    this.worker.on('exit', () => this.fail(new Error('the store writer thread exited')));
    this.worker.unref(); // never keeps the process alive on its own
  }

  private fail(e: Error): void {
    this.dead ??= e;
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }

  run(batch: Batch): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<void>((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      this.worker.ref(); // a batch in flight keeps the process alive until it is written
      this.worker.postMessage({ id, batch });
    }).finally(() => this.unrefWhenIdle());
  }

  private unrefWhenIdle(): void {
    if (this.waiting.size === 0 && !this.closing) this.worker.unref();
  }

  /** The settings in effect on the thread (for diagnosis and tests). */
  settings(): Promise<WriterSettings> {
    return new Promise<WriterSettings>((resolve) => {
      const onReply = (m: Reply) => {
        if (!m.settings) return;
        this.worker.off('message', onReply);
        resolve(m.settings);
      };
      this.worker.on('message', onReply);
      this.worker.ref(); // the answer keeps the process alive
      this.worker.postMessage({ settings: true });
    }).finally(() => this.unrefWhenIdle());
  }

  /** A last checkpoint, then the worker's connection closes. Call after the last batch. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      if (this.dead) return resolve();
      this.worker.ref(); // the process waits for the last checkpoint
      this.worker.once('exit', () => resolve());
      this.worker.on('message', (m: Reply) => m.closed && void this.worker.terminate());
      this.worker.postMessage({ close: true });
    });
    return this.closing;
  }
}
