// Refusals (requests refused before any upstream call) cost nothing upstream, so one key can send
// them as fast as the gateway answers: at one history row each, 18,700 a second filled 360 GB a day.
// Per key and minute the first REFUSALS_RECORDED_PER_MINUTE get full rows; the rest are counted here,
// in memory, and reach the database as one upsert per key and minute per batch (a summary row whose
// not_recorded column adds up). Memory: one entry per key with refusals in the current minute, plus
// entries of past minutes until their counts are written.
import type { HistoryRow } from './types.js';

export const REFUSALS_RECORDED_PER_MINUTE = 20;
const MINUTE_MS = 60_000;

interface KeyMinute {
  /** The summary row's id: one per key and minute. */
  id: string;
  minute: number;
  accountId: number;
  keyId: number;
  /** The first counted refusal's arrival and route (the summary row's). */
  time: number;
  route: HistoryRow['route'];
  recorded: number;
  /** Counted in this process: what the summary row shows until its counts are all written. */
  counted: number;
  /** Not yet handed to a batch, and in the batch in flight. */
  queued: number;
  inFlight: number;
}

/** Refusals to add to a summary row (upserted by its id: the counts of one row add up). */
export interface RefusalCount {
  id: string;
  time: number;
  accountId: number;
  keyId: number;
  route: HistoryRow['route'];
  count: number;
}

export const notRecordedMessage = (n: number) => `${n} more refused request${n === 1 ? '' : 's'} of this key in this minute not recorded`;

export class RefusalCounts {
  private readonly byKeyMinute = new Map<string, KeyMinute>();
  /** Entries with counts not yet written (queued or in flight): read on every request, so kept, not counted. */
  private pending = 0;
  /** Counted since the store opened. */
  total = 0;

  /** true: record this refusal in full; false: it was counted instead. */
  admit(row: HistoryRow): boolean {
    const minute = Math.floor(row.time / MINUTE_MS);
    const k = `${row.keyId}:${minute}`;
    let e = this.byKeyMinute.get(k);
    if (!e) {
      e = { id: `refusals_${row.keyId}_${minute * MINUTE_MS}`, minute, accountId: row.accountId, keyId: row.keyId, time: row.time,
        route: row.route, recorded: 0, counted: 0, queued: 0, inFlight: 0 };
      this.byKeyMinute.set(k, e);
    }
    if (e.recorded < REFUSALS_RECORDED_PER_MINUTE) {
      e.recorded++;
      return true;
    }
    if (e.counted === 0) {
      e.time = row.time;
      e.route = row.route;
    }
    e.counted++;
    if (e.queued + e.inFlight === 0) this.pending++;
    e.queued++;
    this.total++;
    return false;
  }

  /** Summary rows whose counts are not all written yet, as history rows (for reads). */
  unconfirmed(): HistoryRow[] {
    const rows: HistoryRow[] = [];
    for (const e of this.byKeyMinute.values()) if (e.queued + e.inFlight > 0) rows.push(summaryRow(e));
    return rows;
  }

  /** Hand the counts not yet written to `add`, one summary row per key and minute (they are in flight then). */
  take(add: (row: RefusalCount) => void): void {
    const current = Math.floor(Date.now() / MINUTE_MS);
    for (const [k, e] of this.byKeyMinute) {
      if (e.queued > 0) {
        add({ id: e.id, time: e.time, accountId: e.accountId, keyId: e.keyId, route: e.route, count: e.queued });
        e.inFlight += e.queued;
        e.queued = 0;
      } else if (e.inFlight === 0 && e.minute < current) this.byKeyMinute.delete(k); // its minute is over and written
    }
  }

  committed(): void {
    this.pending = 0;
    for (const e of this.byKeyMinute.values()) {
      e.inFlight = 0;
      if (e.queued > 0) this.pending++;
    }
  }

  failed(): void {
    for (const e of this.byKeyMinute.values()) {
      e.queued += e.inFlight;
      e.inFlight = 0;
    }
  }

  /** Summary rows waiting to be written. */
  unwritten(): number {
    return this.pending;
  }
}

function summaryRow(e: KeyMinute): HistoryRow {
  return {
    requestId: e.id, time: e.time, accountId: e.accountId, keyId: e.keyId, route: e.route, model: null, listing: null,
    attempts: [], status: 'error', httpStatus: null, stream: false,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
    holdNano: 0, costNano: 0, latencyMs: 0, ttfbMs: null, error: notRecordedMessage(e.counted), notRecorded: e.counted,
  };
}
