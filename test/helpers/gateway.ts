// A real gateway for end-to-end tests: real HTTP on 127.0.0.1 port 0, a real SQLite file in a temp
// folder, the in-process simulated provider, and an account with credit and an API key.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../lib/config.js';
import type { GatewayConfig } from '../../lib/config-types.js';
import { startGateway as start, type Gateway } from '../../lib/gateway.js';
import { silentLogger, type Logger, type LogStream } from '../../lib/log.js';
import type { Simulator } from '../../lib/simulator/index.js';
import type { Store } from '../../lib/store/types.js';
import { openStore } from '../../lib/store/index.js';
import { parseUsd } from '../../lib/store/money.js';
import { DAY_MS } from '../../lib/dashboard/format.js';

/** Two models, each served by a messages-format and a chat-format offer of the simulator. */
export function testConfigObject(dbPath: string): Record<string, any> {
  return {
    server: { host: '127.0.0.1', port: 0, shutdown_grace_ms: 2000 },
    storage: { sqlite: dbPath, commit_interval_ms: 2 },
    upstream: { first_byte_timeout_ms: 1500, idle_timeout_ms: 1500, commit_timeout_ms: 300 },
    breaker: { failure_threshold: 3, cooldown_ms: 1000 },
    demo: { enabled: false },
    // Tests send many requests with one key: limits out of their way (rate-limit tests set their own).
    rate_limits: { requests_per_minute: 1_000_000_000, tokens_per_minute: 1_000_000_000_000 },
    providers: [
      { id: 'sim-messages', format: 'messages', simulated: true },
      { id: 'sim-chat', format: 'chat', simulated: true },
    ],
    models: [
      { id: 'test/claude', display_name: 'Test Claude', context_window: 200000, max_output_tokens: 8192 },
      { id: 'test/gpt', display_name: 'Test GPT', context_window: 128000, max_output_tokens: 4096 },
    ],
    offers: [
      // Cheapest first per model: the messages offer serves test/claude, the chat offer serves test/gpt.
      { listing: 'test/claude@sim-messages', model: 'test/claude', provider: 'sim-messages', upstream_model: 'claude-up', price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } },
      { listing: 'test/claude@sim-chat', model: 'test/claude', provider: 'sim-chat', upstream_model: 'claude-chat-up', price: { input: 4, output: 16 } },
      { listing: 'test/gpt@sim-chat', model: 'test/gpt', provider: 'sim-chat', upstream_model: 'gpt-up', price: { input: 2.5, output: 10, cache_read: 1.25 } },
      { listing: 'test/gpt@sim-messages', model: 'test/gpt', provider: 'sim-messages', upstream_model: 'gpt-msg-up', price: { input: 3, output: 12, cache_read: 0.3, cache_write: 3.75 } },
    ],
  };
}

export interface TestGatewayOptions {
  /** Change the config object before it is validated (defaults are filled in after). */
  configure?(cfg: Record<string, any>): void;
  /** Credit granted to the test account (USD; default 100). */
  creditUsd?: number;
  clock?: () => number;
  log?: Logger;
  /** Where request log lines go (default: nowhere, so they do not mix with the test's output). */
  requestLog?: LogStream;
  holdSweepIntervalMs?: number;
  /** The store's bound on rows waiting to be written (see MAX_UNWRITTEN_ROWS). */
  maxUnwrittenRows?: number;
}

export interface TestGateway {
  url: string;
  gateway: Gateway;
  config: GatewayConfig;
  sim: Simulator;
  store: Store;
  /** The SQLite file, or the PostgreSQL URL when `configure` chose storage.postgres. */
  dbPath: string;
  accountId: number;
  keyId: number;
  /** A valid API key of the test account. */
  apiKey: string;
  close(): Promise<void>;
}

/**
 * A clock (for `clock`) that runs from noon UTC of the day it is made, so that what a test seeds "a
 * minute ago", on earlier days or this month never crosses a midnight or a month's turn (CI often
 * runs at 00:00 UTC). `noon`: where it starts.
 */
export function noonClock(): { noon: number; now: () => number } {
  const started = Date.now();
  const noon = started - (started % DAY_MS) + DAY_MS / 2;
  return { noon, now: () => noon + (Date.now() - started) };
}

/** A request log that goes nowhere: for gateways started in tests (stdout carries the test's own output). */
export const DISCARD: LogStream = { write: () => true };

export function buildTestConfig(dir: string, configure?: (cfg: Record<string, any>) => void): GatewayConfig {
  const obj = testConfigObject(join(dir, 'gateway.db'));
  configure?.(obj);
  return parseConfig(JSON.stringify(obj), join(dir, 'gateway.json'));
}

export async function startGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-test-'));
  const config = buildTestConfig(dir, opts.configure);
  const log = opts.log ?? silentLogger;
  // As the serving gateway runs it.
  const store = openStore(config, { clock: opts.clock, backgroundWriter: true, log, maxUnwrittenRows: opts.maxUnwrittenRows });
  const account = await store.accounts.create({ email: 'test@example.com' });
  const credit = parseUsd(String(opts.creditUsd ?? 100));
  if (credit > 0) await store.ledger.grant(account.id, credit, 'test credit');
  const { key, secret } = await store.keys.create({ accountId: account.id, name: 'test key' });
  const gateway = await start(config, { store, clock: opts.clock, log, trackFinished: true, holdSweepIntervalMs: opts.holdSweepIntervalMs, requestLog: opts.requestLog ?? DISCARD });
  return {
    url: gateway.url,
    gateway,
    config,
    sim: gateway.simulator!,
    store,
    dbPath: config.storage.sqlite ?? config.storage.postgres!,
    accountId: account.id,
    keyId: key.id,
    apiKey: secret,
    async close() {
      await gateway.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
