// Limits kept in memory on PostgreSQL nodes: a key's rate limit shared by the live nodes (each
// admits its 1/N share, no round trip per request), so a key spread over two nodes gets its limit
// in total, not twice it.
import t from 'tap';
import { startGateway as startNode } from '../../lib/gateway.js';
import { silentLogger } from '../../lib/log.js';
import { DISCARD, startGateway } from '../helpers/gateway.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { postChat } from '../helpers/post-chat.js';
import { until } from '../helpers/until.js';

const skip = await postgresSkip();
const chat = { model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] };

const RPM = 20;
const onPostgres = (url: string) => ({
  configure: (c: Record<string, any>) => {
    c.storage = { postgres: url, commit_interval_ms: 2 };
    c.rate_limits.requests_per_minute = RPM;
  },
});

t.test("a key's requests spread over two nodes are limited near its rpm in total, not twice it", { skip }, async (t) => {
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(await freshPostgresUrl()) });
  t.teardown(() => gw.close());
  const other = await startNode(gw.config, { log: silentLogger, requestLog: DISCARD });
  t.teardown(() => other.close());
  // Each node counts the other at its next heartbeat (every second).
  await until('both nodes counting two', () => gw.store.liveNodes?.() === 2 && other.store.liveNodes?.() === 2, 5000);

  const started = performance.now();
  const statuses: number[] = [];
  let limitHeader: unknown;
  for (let i = 0; i < 2 * RPM; i++) {
    const r = await postChat(i % 2 ? other.url : gw.url, gw.apiKey, chat);
    statuses.push(r.status);
    limitHeader ??= r.headers['x-ratelimit-limit-requests'];
  }
  const seconds = (performance.now() - started) / 1000;
  const served = statuses.filter((s) => s === 200).length;
  t.same(statuses.filter((s) => s !== 200 && s !== 429), [], 'every answer served or rate limited');
  // A minute's burst (RPM) plus what refills at RPM per minute while the loop runs.
  const bound = RPM + Math.ceil((RPM * seconds) / 60);
  t.ok(served >= RPM && served <= bound, `served ${served} of ${2 * RPM} in ${seconds.toFixed(1)} s (limit ${RPM}, at most ${bound})`);
  t.equal(Number(limitHeader), RPM / 2, "the headers give this node's share");
  const refused = await postChat(gw.url, gw.apiKey, chat);
  t.equal(refused.status, 429);
  t.match(refused.json, { error: { code: 'rate_limit_requests', message: new RegExp(`limit of ${RPM} requests per minute \\(shared by 2 gateway nodes\\)`) } });

  // A node that stops gives its share back: the other counts one node at its next heartbeat.
  await other.close();
  await until('the remaining node counting one', () => gw.store.liveNodes?.() === 1, 3000);
  const alone = await postChat(gw.url, gw.apiKey, chat);
  t.equal(Number(alone.headers['x-ratelimit-limit-requests']), RPM, 'alone, the whole limit');
});
