// A serving node's ear for changes: one dedicated connection (not from the pool: a pooled
// connection is handed to queries and released, and a LISTEN lasts only as long as its session)
// listening on gateway_changes, so a key revoked, a routing setting or an account changed on any
// node or from the command line moves this node's change version as soon as the change commits.
//
// Nothing is missed when the connection breaks: while it is down the ChangeCounter polls as it
// does without a listener; it reconnects with a doubling delay (RECONNECT_MIN_MS up to
// RECONNECT_MAX_MS) and, once listening again, reads the counter once, so a change made while it
// was down counts then if no poll saw it already.
//
// While listening it still reads the counter every LISTENING_POLL_MS, on the listening connection
// itself. Announcements do not get lost on a live session, so this read is not for them: it is the
// safety net for a connection that died without a word (a host or network gone silent sends no
// reset, and TCP keepalive notices only after minutes). The read then times out (QUERY_TIMEOUT_MS),
// the connection counts as broken and polling takes over: a change made during such a silence is
// seen within LISTENING_POLL_MS + QUERY_TIMEOUT_MS instead of never. Once a second is one
// single-row read per node, a tenth of what polling for every serving node's 100 ms bound costs.
import type pg from 'pg';
import { loadPg } from '../../optional-packages.js';
import type { Logger } from '../../log.js';
import type { ChangeCounter } from './changes.js';
import { CONNECT_TIMEOUT_MS, types } from './db.js';
import { LEASE_CHANNEL } from './leases.js';

/** Where migration 002's trigger announces each move of the change counter. */
export const CHANGE_CHANNEL = 'gateway_changes';
export const LISTENING_POLL_MS = 1000;
export const RECONNECT_MIN_MS = 100;
export const RECONNECT_MAX_MS = 5000;
const QUERY_TIMEOUT_MS = CONNECT_TIMEOUT_MS;

export interface ListenerTimings {
  /** The safety read of the counter while listening. */
  pollMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
}

export const DEFAULT_LISTENER_TIMINGS: ListenerTimings = {
  pollMs: LISTENING_POLL_MS, reconnectMinMs: RECONNECT_MIN_MS, reconnectMaxMs: RECONNECT_MAX_MS,
};

export class ChangeListener {
  /** Connected, listening, and the counter read since: sync() needs no poll. */
  listening = false;
  /** The store's schema, once connected (announcements of other schemas are ignored). */
  get listeningSchema(): string | undefined {
    return this.schema;
  }
  /** The listening session's backend process id (pg_stat_activity.pid), while there is one. */
  pid: number | undefined;
  private client: pg.Client | undefined;
  private schema: string | undefined;
  private retryMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private reading = false;
  private downSince: number | undefined;
  private stopped = false;
  /** Where messages on the lease channel go (the ledger, on a serving node). */
  leaseMessage: ((what: string, accountId: number, owner: string) => Promise<void>) | undefined;
  /** Called when listening stops (the connection broke): whatever needs to hear the channel stops relying on it. */
  deaf: (() => void) | undefined;

  constructor(
    private readonly url: string,
    private readonly counter: ChangeCounter,
    private readonly log: Logger,
    /** application_name of the session, so an operator can tell which node listens. */
    private readonly name: string,
    private readonly timings: ListenerTimings = DEFAULT_LISTENER_TIMINGS,
  ) {
    this.retryMs = timings.reconnectMinMs;
    counter.listener = this;
  }

  start(): void {
    if (this.stopped || this.client) return;
    void this.connect();
    this.pollTimer = setInterval(() => void this.read(), this.timings.pollMs);
    this.pollTimer.unref();
  }

  private async connect(): Promise<void> {
    this.retryTimer = undefined;
    if (this.stopped) return;
    const client = new (loadPg().Client)({
      connectionString: this.url, types, keepAlive: true, application_name: this.name,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: QUERY_TIMEOUT_MS,
    });
    this.client = client;
    // Registered before connecting: an unheard 'error' would end the process.
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('the connection ended')));
    client.on('notification', (m) => this.heard(m));
    try {
      await client.connect();
      // The schema first: announcements from other schemas of the database are not this store's.
      const [{ schema, pid }] = (await client.query<{ schema: string; pid: number }>('SELECT current_schema() AS schema, pg_backend_pid() AS pid')).rows;
      this.schema = schema;
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      await client.query(`LISTEN ${LEASE_CHANNEL}`);
      // After LISTEN: whatever committed before is in this read, whatever after is announced.
      const [{ n }] = (await client.query<{ n: number }>('SELECT n FROM change_counter')).rows;
      if (this.client !== client) return; // lost or stopped meanwhile
      this.counter.saw(n);
      this.listening = true;
      this.pid = pid;
      this.retryMs = this.timings.reconnectMinMs;
      if (this.downSince !== undefined) {
        this.log('info', 'store: listening for changes again', { seconds: Math.round((Date.now() - this.downSince) / 1000) });
        this.downSince = undefined;
      }
    } catch (err) {
      this.lost(client, err as Error);
    }
  }

  private heard(m: pg.Notification): void {
    if (m.channel === LEASE_CHANNEL && m.payload) {
      // "<what> <schema> <account> <owner>" (see leases.ts)
      const [what, schema, account, owner] = m.payload.split(' ');
      if (schema === this.schema) void this.leaseMessage?.(what, Number(account), owner);
      return;
    }
    if (m.channel !== CHANGE_CHANNEL || !m.payload) return;
    const space = m.payload.indexOf(' ');
    if (space < 0 || m.payload.slice(space + 1) !== this.schema) return;
    const n = Number(m.payload.slice(0, space));
    if (Number.isSafeInteger(n)) this.counter.announced(n);
  }

  /** The safety read (see the top of this file); a failure or a timeout counts as a broken connection. */
  private async read(): Promise<void> {
    const client = this.client;
    if (!this.listening || !client || this.reading) return;
    this.reading = true;
    try {
      const [{ n }] = (await client.query<{ n: number }>('SELECT n FROM change_counter')).rows;
      if (this.client === client) this.counter.saw(n);
    } catch (err) {
      this.lost(client, err as Error);
    } finally {
      this.reading = false;
    }
  }

  /** `client` broke (or failed to connect): poll meanwhile, and connect again after the delay. */
  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client) return; // an earlier connection's late events
    this.client = undefined;
    this.listening = false;
    this.pid = undefined;
    this.deaf?.();
    client.end().catch(() => {});
    if (this.stopped) return;
    if (this.downSince === undefined) {
      this.downSince = Date.now();
      this.log('warn', 'store: the connection listening for changes broke; polling for them until it is back', { err: err.message });
    }
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, this.timings.reconnectMaxMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pollTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    this.pid = undefined;
    await client?.end().catch(() => {});
  }
}
