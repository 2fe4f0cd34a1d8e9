// Top-ups through Stripe Checkout, with the official package: one Checkout Session per top-up (card,
// or Stripe's crypto payment method for stablecoins), recorded as a pending payment; the signed
// webhook confirms it, and only then is the balance credited (exactly once, see Payments.confirm).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Stripe from 'stripe';
import { loadStripe } from '../optional-packages.js';
import type { StripeConfig } from '../config-types.js';
import type { Logger } from '../log.js';
import { readBody } from '../body.js';
import { isUnavailable, toGatewayError } from '../errors.js';
import { formatUsd, parseUsd } from '../store/money.js';
import { StoreError, type Account, type Payment, type PaymentMethod, type Store } from '../store/types.js';

const NANO_PER_CENT = 10_000_000;
/** Stripe's events are a few kilobytes; anything far larger is not one. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** One client per config section: a reload with other keys gets a new one. */
const clients = new WeakMap<StripeConfig, Stripe>();

export function stripeClient(cfg: StripeConfig): Stripe {
  let client = clients.get(cfg);
  if (!client) {
    const base = cfg.api_base ? new URL(cfg.api_base) : undefined;
    const protocol = base?.protocol === 'http:' ? 'http' : 'https';
    client = new (loadStripe())(cfg.secret_key, {
      maxNetworkRetries: 2,
      timeout: 20_000,
      appInfo: { name: 'llm-gateway' },
      ...(base && { host: base.hostname, port: base.port || (protocol === 'http' ? 80 : 443), protocol }),
    });
    clients.set(cfg, client);
  }
  return client;
}

/** The configured top-up amounts in nano-USD (whole cents, as the schema requires). */
export const topUpAmounts = (cfg: StripeConfig): number[] => cfg.amounts_usd.map((a) => parseUsd(String(a)));

export const paymentMethods = (cfg: StripeConfig): PaymentMethod[] => (cfg.stablecoin ? ['card', 'stablecoin'] : ['card']);

/** Start a Checkout Session and record its pending payment; returns the page to send the payer to. */
export async function startCheckout(cfg: StripeConfig, store: Store, p: { account: Account; amountNano: number; method: PaymentMethod; returnTo: string }): Promise<string> {
  const session = await stripeClient(cfg).checkout.sessions.create({
    mode: 'payment',
    allowed_payment_method_types: [p.method === 'stablecoin' ? 'crypto' : 'card'],
    line_items: [{
      quantity: 1,
      price_data: { currency: 'usd', unit_amount: p.amountNano / NANO_PER_CENT, product_data: { name: `API credit, ${formatUsd(p.amountNano)}` } },
    }],
    customer_email: p.account.email,
    client_reference_id: String(p.account.id),
    // Enough to rebuild the payment row should the process stop between this call and the insert below.
    metadata: { gateway_account: String(p.account.id), gateway_amount_nano: String(p.amountNano), gateway_method: p.method },
    success_url: `${p.returnTo}?payment=success`,
    // Stripe fills in the session's id, so coming back from cancelling can expire that session.
    cancel_url: `${p.returnTo}?payment=cancelled&session={CHECKOUT_SESSION_ID}`,
  });
  await store.payments.create({ accountId: p.account.id, providerRef: session.id, amountNano: p.amountNano, method: p.method });
  if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a payment page`);
  return session.url;
}

type Session = Stripe.Checkout.Session;

const SESSION_ID = /^cs_[A-Za-z0-9_]+$/;

/**
 * The payer came back from cancelling: expire the Checkout Session at Stripe (so it can never be
 * paid later) and mark its payment cancelled. `sessionId` is what the return address carried;
 * without a usable one, the account's newest pending payment is the one cancelled. Only the
 * account's own pending payment is touched; a session Stripe will not expire (paid meanwhile)
 * stays pending for its webhook. Returns the payment as it now is, or null when none applied.
 */
export async function cancelCheckout(cfg: StripeConfig, store: Store, accountId: number, sessionId: string | null): Promise<Payment | null> {
  const payment = sessionId && SESSION_ID.test(sessionId)
    ? await store.payments.byRef(sessionId)
    : (await store.payments.list(accountId, { limit: 1 }))[0] ?? null;
  if (!payment || payment.accountId !== accountId || payment.status !== 'pending') return null;
  const session = await stripeClient(cfg).checkout.sessions.expire(payment.providerRef);
  if (session.status !== 'expired') return null;
  return store.payments.cancel(payment.providerRef);
}

/** Stripe's own words on why the session's payment failed (the PaymentIntent's last error), or null. */
async function failureReason(cfg: StripeConfig, s: Session, log: Logger): Promise<string | null> {
  if (!s.payment_intent) return null;
  try {
    const intent = typeof s.payment_intent === 'string' ? await stripeClient(cfg).paymentIntents.retrieve(s.payment_intent) : s.payment_intent;
    return intent.last_payment_error?.message ?? null;
  } catch (err) {
    // The failure is recorded either way; only its explanation is missing.
    log('warn', 'could not read why a Stripe payment failed', { session: s.id, err });
    return null;
  }
}

/**
 * The pending payment of a session we started but did not get to record (from its metadata):
 * 'recorded', 'unknown payment' (metadata missing or not matching what was paid), or
 * 'unknown account' (it names an account this database does not have).
 */
async function recordFromMetadata(store: Store, s: Session): Promise<'recorded' | 'unknown payment' | 'unknown account'> {
  const accountId = Number(s.metadata?.gateway_account);
  const amountNano = Number(s.metadata?.gateway_amount_nano);
  const method = s.metadata?.gateway_method;
  if (!Number.isSafeInteger(accountId) || !Number.isSafeInteger(amountNano) || (method !== 'card' && method !== 'stablecoin')) return 'unknown payment';
  // What was paid must be what the metadata says would be credited.
  if (s.currency !== 'usd' || s.amount_total === null || s.amount_total * NANO_PER_CENT !== amountNano) return 'unknown payment';
  try {
    await store.payments.create({ accountId, providerRef: s.id, amountNano, method });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'not_found') return 'unknown account';
    if (!(err instanceof StoreError && err.code === 'conflict')) throw err;
  }
  return 'recorded';
}

type Outcome = 'awaiting payment' | 'credited' | 'already credited' | 'failed' | 'already confirmed' | 'already cancelled' | 'unknown payment' | 'unknown account' | 'ignored';

/** Apply one verified event; returns what happened, for the answer and the log. */
async function applyEvent(cfg: StripeConfig, store: Store, event: Stripe.Event, log: Logger): Promise<Outcome> {
  switch (event.type) {
    case 'checkout.session.completed':
      // Asynchronous methods complete the session before the money arrives: wait for async_payment_succeeded.
      if (event.data.object.payment_status !== 'paid') return 'awaiting payment';
      return confirm(store, event.data.object);
    case 'checkout.session.async_payment_succeeded':
      return confirm(store, event.data.object);
    case 'checkout.session.async_payment_failed':
    case 'checkout.session.expired': {
      // Only a pending payment fails: a late expiry of a session that was paid (or cancelled) leaves it as it is.
      const s = event.data.object;
      const reason = event.type === 'checkout.session.async_payment_failed' ? await failureReason(cfg, s, log) : null;
      const payment = await store.payments.fail(s.id, reason);
      if (!payment) return 'unknown payment';
      return payment.status === 'confirmed' ? 'already confirmed' : payment.status === 'cancelled' ? 'already cancelled' : 'failed';
    }
    default:
      return 'ignored';
  }
}

async function confirm(store: Store, session: Session): Promise<Outcome> {
  let result = await store.payments.confirm(session.id);
  if (!result) {
    const recorded = await recordFromMetadata(store, session);
    if (recorded !== 'recorded') return recorded;
    result = await store.payments.confirm(session.id);
  }
  if (!result) return 'unknown payment';
  return result.credited ? 'credited' : 'already credited';
}

function answer(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/**
 * POST /webhooks/stripe. The signature (and its timestamp, within Stripe's default tolerance of
 * five minutes) is checked by the package itself on the exact bytes received. 200 only once the
 * effect is durable; any other status makes Stripe deliver the event again later.
 */
export async function stripeWebhook(req: IncomingMessage, res: ServerResponse, cfg: StripeConfig, store: Store, log: Logger): Promise<void> {
  if (req.method !== 'POST') {
    req.resume();
    res.setHeader('allow', 'POST');
    return answer(res, 405, { error: 'POST only' });
  }
  let body: Buffer;
  try {
    body = await readBody(req, WEBHOOK_BODY_LIMIT);
  } catch {
    res.setHeader('connection', 'close');
    return answer(res, 413, { error: 'body too large' });
  }
  let event: Stripe.Event;
  try {
    event = stripeClient(cfg).webhooks.constructEvent(body, String(req.headers['stripe-signature'] ?? ''), cfg.webhook_secret);
  } catch (err) {
    log('warn', 'stripe webhook refused: bad signature', { reason: (err as Error).message });
    return answer(res, 400, { error: 'signature verification failed' });
  }
  try {
    const outcome = await applyEvent(cfg, store, event, log);
    const ids = { event: event.id, type: event.type, session: (event.data.object as { id?: string }).id };
    if (outcome === 'unknown payment') log('warn', 'stripe webhook for a payment this gateway did not start', ids);
    // Stripe took the money but no account here can receive it: retrying cannot help (2xx, or Stripe
    // retries for days), so this line is the operator's cue to credit or refund it by hand.
    if (outcome === 'unknown account') {
      const s = event.data.object as Session;
      log('error', 'stripe payment not credited: its account does not exist here; credit or refund it by hand', {
        ...ids, account: s.metadata?.gateway_account, amount_usd: s.amount_total === null ? null : s.amount_total / 100, currency: s.currency,
      });
    }
    answer(res, 200, { received: true, outcome });
  } catch (err) {
    if (isUnavailable(err)) {
      // The database is away (the store logs that): no fault here, and nothing was applied. A 503
      // with Retry-After says so; Stripe delivers the event again later, as after any non-2xx.
      log('warn', 'stripe webhook deferred: the database is away; Stripe will retry', { event: event.id, type: event.type });
      res.setHeader('retry-after', String(toGatewayError(err).retryAfter));
      return answer(res, 503, { error: 'database unavailable; retry later' });
    }
    log('error', 'stripe webhook failed; Stripe will retry', { event: event.id, type: event.type, err });
    answer(res, 500, { error: 'not processed' });
  }
}
