// Offers: USD per million tokens → exact integer nano-USD per token, cache prices defaulting to
// input, output ceilings, feature defaults, provider URLs.
import t from 'tap';
import fc from 'fast-check';
import { parseConfig } from '../../lib/config.js';
import { resolveOffers, unitPrices, usdPerMillionToNanoPerToken } from '../../lib/offers.js';

t.test('prices convert exactly', async (t) => {
  const cases: [number, number][] = [
    [0.3, 300],
    [3.75, 3750],
    [0.001, 1],
    [0, 0],
    [15, 15_000],
    [3.438, 3438],
    [0.275, 275],
    [4.35, 4350], // 4.35 * 1000 is 4349.999… in binary floating point
    [0.07, 70], // 0.07 * 1000 is 70.00000000000001
    [1_000_000, 1_000_000_000],
  ];
  for (const [usd, nano] of cases) {
    const got = usdPerMillionToNanoPerToken(usd);
    t.equal(got, nano, `${usd} USD/M → ${nano} nano/token`);
    t.ok(Number.isSafeInteger(got), 'an integer');
  }
});

t.test('every price with up to 3 decimals up to 200 USD/M converts exactly', async (t) => {
  let wrong = 0;
  for (let k = 0; k <= 200_000; k++) {
    // Parse the decimal text as the config loader does, not k / 1000 computed in floating point.
    if (usdPerMillionToNanoPerToken(Number(`${Math.floor(k / 1000)}.${String(k % 1000).padStart(3, '0')}`)) !== k) wrong++;
  }
  t.equal(wrong, 0);
});

t.test('property: integer nano prices survive the decimal round trip', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), (nano) => usdPerMillionToNanoPerToken(Number((nano / 1000).toFixed(3))) === nano),
  );
  t.pass('no counterexample');
});

t.test('more than 3 decimals is refused', async (t) => {
  t.throws(() => usdPerMillionToNanoPerToken(0.0001), /more than 3 decimals/);
  t.throws(() => usdPerMillionToNanoPerToken(1.2345), /more than 3 decimals/);
});

t.test('cache prices default to the input price', async (t) => {
  t.same(unitPrices({ input: 3, output: 15 }), { input: 3000, output: 15_000, cacheRead: 3000, cacheWrite: 3000, cacheWrite1h: 6000 });
  t.same(unitPrices({ input: 3, output: 15, cache_read: 0.3 }), { input: 3000, output: 15_000, cacheRead: 300, cacheWrite: 3000, cacheWrite1h: 6000 });
  t.same(unitPrices({ input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 }), { input: 3000, output: 15_000, cacheRead: 300, cacheWrite: 3750, cacheWrite1h: 6000 });
  t.same(unitPrices({ input: 3, output: 15, cache_read: 0 }), { input: 3000, output: 15_000, cacheRead: 0, cacheWrite: 3000, cacheWrite1h: 6000 }, 'a zero cache price is kept');
});


const config = (extra: (c: any) => void = () => {}) => {
  const c: any = {
    providers: [
      { id: 'real', format: 'messages', base_url: 'https://api.example.com/' },
      { id: 'real-chat', format: 'chat', base_url: 'https://chat.example.com/v1//' },
      { id: 'sim-m', format: 'messages', simulated: true },
      { id: 'sim-c', format: 'chat', simulated: true },
    ],
    models: [
      { id: 'm/a', context_window: 100_000, max_output_tokens: 8000 },
      { id: 'm/b', context_window: 100_000, max_output_tokens: 4000 },
      { id: 'm/empty', context_window: 1000, max_output_tokens: 100 },
    ],
    offers: [
      { listing: 'a1', model: 'm/a', provider: 'real', upstream_model: 'up-a1', price: { input: 0.3, output: 1.2 } },
      { listing: 'a2', model: 'm/a', provider: 'sim-c', upstream_model: 'up-a2', price: { input: 1, output: 2 }, max_output_tokens: 2000, subscription: true, supports: { images: false } },
      { listing: 'b1', model: 'm/b', provider: 'real-chat', upstream_model: 'up-b1', price: { input: 1, output: 2 }, max_output_tokens: 99_999 },
      { listing: 'b2', model: 'm/b', provider: 'sim-m', upstream_model: 'up-b2', price: { input: 1, output: 2 } },
    ],
  };
  extra(c);
  return parseConfig(JSON.stringify(c), 'test.json');
};

t.test('resolveOffers groups by model, resolves prices, ceilings and features', async (t) => {
  const byModel = resolveOffers(config(), 'http://127.0.0.1:5555');
  t.same([...byModel.keys()], ['m/a', 'm/b', 'm/empty']);
  t.same(byModel.get('m/empty'), [], 'a model without offers has an empty list');
  const [a1, a2] = byModel.get('m/a')!;
  t.equal(a1.listing, 'a1');
  t.equal(a1.upstreamModel, 'up-a1');
  t.equal(a1.model.id, 'm/a');
  t.same(a1.prices, { input: 300, output: 1200, cacheRead: 300, cacheWrite: 300, cacheWrite1h: 600 });
  t.equal(a1.maxOutputTokens, 8000, 'no offer ceiling: the model maximum');
  t.equal(a1.subscription, false);
  t.same(a1.supports, { tools: true, images: true, reasoning: true, json_schema: true, documents: true });
  t.equal(a2.maxOutputTokens, 2000, 'the offer ceiling when lower');
  t.equal(a2.subscription, true);
  t.same(a2.supports, { tools: true, images: false, reasoning: true, json_schema: true, documents: true });
  const [b1, b2] = byModel.get('m/b')!;
  t.equal(b1.maxOutputTokens, 4000, 'an offer ceiling above the model maximum is capped to it');
  t.equal(b2.provider.id, 'sim-m');
});

t.test('provider URLs: trailing slashes removed; simulated providers use the simulator address', async (t) => {
  const byModel = resolveOffers(config(), 'http://127.0.0.1:5555');
  const [a1, a2] = byModel.get('m/a')!;
  const [b1, b2] = byModel.get('m/b')!;
  t.equal(a1.provider.url.href, 'https://api.example.com/');
  t.equal(b1.provider.url.href, 'https://chat.example.com/v1');
  t.equal(a2.provider.url.href, 'http://127.0.0.1:5555/v1', 'chat format: with /v1');
  t.equal(b2.provider.url.href, 'http://127.0.0.1:5555/', 'messages format: without /v1');
});

t.test('a simulated provider without a running simulator is a clear error', async (t) => {
  const onlySim = (format: 'chat' | 'messages') =>
    config((c) => {
      c.providers = [{ id: 'sim', format, simulated: true }];
      c.offers = [{ listing: 'x', model: 'm/a', provider: 'sim', upstream_model: 'u', price: { input: 1, output: 1 } }];
    });
  t.throws(() => resolveOffers(onlySim('messages')), /provider sim is simulated but no simulator is running/, 'messages format');
  t.throws(() => resolveOffers(onlySim('chat')), /provider sim is simulated but no simulator is running/, 'chat format');
});

t.test('1-hour cache writes: their own price, else 2 × input (the vendor\'s rate), never below the 5-minute price', async (t) => {
  t.equal(unitPrices({ input: 3, output: 15, cache_write: 3.75, cache_write_1h: 6.5 }).cacheWrite1h, 6500);
  t.equal(unitPrices({ input: 3, output: 15, cache_write_1h: 0 }).cacheWrite1h, 0, 'a zero price is kept');
  t.equal(unitPrices({ input: 3, output: 15, cache_write: 3.75 }).cacheWrite1h, 6000);
  t.equal(unitPrices({ input: 1, output: 15, cache_write: 3.75 }).cacheWrite1h, 3750, 'a 5-minute price above 2 × input');
  t.equal(unitPrices({ input: 0.001, output: 1 }).cacheWrite1h, 2, 'exact at the smallest price');
  const cfg = config((c) => (c.offers[0].price = { input: 3, output: 15, cache_write_1h: 6.123 }));
  t.equal(resolveOffers(cfg, 'http://127.0.0.1:1').get('m/a')![0].prices.cacheWrite1h, 6123, 'the config field is accepted');
  t.throws(() => config((c) => (c.offers[0].price = { input: 3, output: 15, cache_write_1h: 6.1234 })), 'at most 3 decimals');
});
