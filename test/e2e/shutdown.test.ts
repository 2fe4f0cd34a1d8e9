// A stream still running when the shutdown grace period ends is cut, and still charged for what it
// produced, with its history row: the store is closed only after every request's done hooks ran.
import t from 'tap';
import http from 'node:http';
import { startGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

t.test('shutdown deadline: the cut stream is charged and recorded', async (t) => {
  const gw = await startGateway({ configure: (c) => (c.server.shutdown_grace_ms = 200) });
  t.teardown(() => gw.close());
  const before = (await gw.store.ledger.balance(gw.accountId)).balance;

  // A ~2 s stream; wait for its first bytes so it is surely in flight.
  const { id, ended } = await new Promise<{ id: string; ended: Promise<void> }>((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': gw.apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' } }, (res) => {
      const ended = new Promise<void>((done) => {
        res.on('close', () => done());
        res.on('error', () => done());
      });
      res.once('data', () => resolve({ id: String(res.headers['x-request-id']), ended }));
      res.resume();
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'test/claude', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'x <<sim words=100 delay_ms=20>>' }] }));
  });

  await gw.gateway.close(); // resolves only after the cut request's done hooks ran
  const row = await gw.store.history.get(id); // so the row is there already, before anything else runs
  await ended;
  t.ok(row, 'the cut request has its history row');
  t.ok(row!.costNano > 0, `charged for what was produced (${row!.costNano} nano-USD)`);
  t.ok(row!.costNano < row!.holdNano, 'less than the whole hold');
  const after = await gw.store.ledger.balance(gw.accountId);
  t.equal(before - after.balance, row!.costNano, 'the charge reached the ledger');
  t.equal(after.held, 0, 'no hold left open');
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
