// `gateway simulate`: prints its url, serves, and closes on SIGINT or SIGTERM (its flags: test/e2e/cli.test.ts).
import t from 'tap';
import { runSimulatorCli, type Simulator } from '../../../lib/simulator/index.js';

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`prints its url, serves, and closes on ${signal}`, async (t) => {
    const printed: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string) => printed.push(chunk) > 0) as typeof write;
    let sim: Simulator;
    try {
      sim = await runSimulatorCli({ port: 0, host: '127.0.0.1', apiKey: 'k' });
    } finally {
      process.stdout.write = write;
    }
    t.same(printed, [`${sim.url}\n`]);
    t.match(sim.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(sim.url + '/v1/models', { headers: { authorization: 'Bearer k' } });
    t.match(await res.json(), { object: 'list' });

    const listeners = process.listenerCount(signal);
    // Only the JS listeners run: tap's own exit handler stands aside while another listener exists.
    process.emit(signal);
    t.equal(process.listenerCount(signal), listeners - 1, 'its signal handlers are removed');
    await t.rejects(fetch(sim.url + '/v1/models', { headers: { authorization: 'Bearer k' } }), 'the server is closed');
  });
}
