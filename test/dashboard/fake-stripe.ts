// A local fake of the parts of Stripe's API the gateway uses: Checkout Sessions (created and expired
// through the official package, which is pointed here with host/port/protocol), PaymentIntents (read
// for why a payment failed) and a hosted "payment page";
// plus signed webhook events made with the package's own test-header function.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export const SECRET_KEY = 'sk_test_fake_gateway';
export const WEBHOOK_SECRET = 'whsec_fake_gateway_secret';

export interface FakeSession {
  id: string;
  object: 'checkout.session';
  mode: 'payment';
  url: string;
  amount_total: number;
  currency: string;
  payment_status: 'unpaid' | 'paid';
  status: 'open' | 'complete' | 'expired';
  client_reference_id: string | null;
  customer_email: string | null;
  metadata: Record<string, string>;
  success_url: string;
  cancel_url: string;
  allowed_payment_method_types: string[];
  payment_intent: string | null;
}

/** The part of a PaymentIntent the gateway reads: why its last attempt failed. */
export interface FakePaymentIntent {
  id: string;
  object: 'payment_intent';
  status: string;
  last_payment_error: { type: string; code?: string; message?: string } | null;
}

export interface FakeStripe {
  url: string;
  sessions: Map<string, FakeSession>;
  /** The form fields of every POST /v1/checkout/sessions, in order. */
  created: Record<string, string>[];
  /** The ids of every POST /v1/checkout/sessions/{id}/expire, in order (refused ones too). */
  expired: string[];
  /** PaymentIntents GET /v1/payment_intents/{id} answers with (tests add failed ones). */
  intents: Map<string, FakePaymentIntent>;
  /** A signed webhook delivery for an event about a session. */
  event(sessionId: string, type: string, opts?: { secret?: string; timestamp?: number; eventId?: string; session?: Partial<FakeSession> }): { body: string; signature: string };
  close(): Promise<void>;
}

const signer = new Stripe(SECRET_KEY);
let seq = 0;

export async function startFakeStripe(): Promise<FakeStripe> {
  const sessions = new Map<string, FakeSession>();
  const created: Record<string, string>[] = [];
  const expired: string[] = [];
  const intents = new Map<string, FakePaymentIntent>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${++seq}` });
        res.end(JSON.stringify(value));
      };
      const path = (req.url ?? '').split('?')[0];
      const api = path.startsWith('/v1/');
      if (api && req.headers.authorization !== `Bearer ${SECRET_KEY}`) return json(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
      const expire = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(path);
      if (req.method === 'POST' && expire) {
        // As Stripe: only an open session can be expired.
        expired.push(expire[1]);
        const s = sessions.get(expire[1]);
        if (!s) return json(404, { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such checkout.session: '${expire[1]}'` } });
        if (s.status !== 'open') return json(400, { error: { type: 'invalid_request_error', message: `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${s.status}".` } });
        s.status = 'expired';
        return json(200, s);
      }
      const intent = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && intent) {
        const pi = intents.get(intent[1]);
        return pi ? json(200, pi) : json(404, { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such payment_intent: '${intent[1]}'` } });
      }
      if (req.method === 'POST' && path === '/v1/checkout/sessions') {
        if (req.headers.authorization !== `Bearer ${SECRET_KEY}`) return json(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
        const f = Object.fromEntries(new URLSearchParams(body));
        created.push(f);
        const id = `cs_test_${(++seq).toString().padStart(6, '0')}${Math.random().toString(36).slice(2, 10)}`;
        const metadata: Record<string, string> = {};
        for (const [k, v] of Object.entries(f)) {
          const m = /^metadata\[(.+)\]$/.exec(k);
          if (m) metadata[m[1]] = v;
        }
        const s: FakeSession = {
          id, object: 'checkout.session', mode: 'payment', url: `${fake.url}/pay/${id}`,
          amount_total: Number(f['line_items[0][price_data][unit_amount]']) * Number(f['line_items[0][quantity]']),
          currency: f['line_items[0][price_data][currency]'], payment_status: 'unpaid', status: 'open',
          client_reference_id: f.client_reference_id ?? null, customer_email: f.customer_email ?? null, metadata,
          // Stripe fills in {CHECKOUT_SESSION_ID} in the return addresses.
          success_url: f.success_url.replaceAll('{CHECKOUT_SESSION_ID}', id), cancel_url: f.cancel_url.replaceAll('{CHECKOUT_SESSION_ID}', id),
          allowed_payment_method_types: Object.entries(f).filter(([k]) => k.startsWith('allowed_payment_method_types')).map(([, v]) => v),
          payment_intent: null,
        };
        sessions.set(id, s);
        return json(200, s);
      }
      const pay = /^\/pay\/(cs_test_\w+)$/.exec(path);
      const s = pay && sessions.get(pay[1]);
      if (s && req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end(`<!doctype html><title>Fake checkout</title><h1>Pay $${(s.amount_total / 100).toFixed(2)}</h1>
          <p>Methods: ${s.allowed_payment_method_types.join(', ')}</p>
          <form method="post"><button>Pay</button></form><a href="${s.cancel_url}">Cancel</a>`);
      }
      if (s && req.method === 'POST') {
        // The payer finished on Stripe's page; the money is confirmed later, by the webhook.
        s.status = 'complete';
        res.writeHead(303, { location: s.success_url });
        return res.end();
      }
      json(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path})` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: FakeStripe = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sessions,
    created,
    expired,
    intents,
    event(sessionId, type, opts = {}) {
      const s = sessions.get(sessionId);
      const object = { ...(s ?? { id: sessionId, object: 'checkout.session' }), ...opts.session };
      if (type === 'checkout.session.completed' && !opts.session?.payment_status) object.payment_status = 'paid';
      const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
      const body = JSON.stringify({
        id: opts.eventId ?? `evt_${++seq}`, object: 'event', api_version: '2026-10-28.endive', created: timestamp,
        type, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, data: { object },
      }, null, 2);
      const signature = signer.webhooks.generateTestHeaderString({ payload: body, secret: opts.secret ?? WEBHOOK_SECRET, timestamp });
      return { body, signature };
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return fake;
}

/** POST a webhook delivery to the gateway. */
export async function deliver(gatewayUrl: string, d: { body: string; signature: string }): Promise<{ status: number; body: any }> {
  const r = await fetch(`${gatewayUrl}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': d.signature }, body: d.body });
  return { status: r.status, body: await r.json() };
}

/** The config section the gateway needs to talk to this fake. */
export const stripeConfig = (fake: FakeStripe, extra: Record<string, unknown> = {}) =>
  ({ secret_key: SECRET_KEY, webhook_secret: WEBHOOK_SECRET, api_base: fake.url, amounts_usd: [10, 25, 50], ...extra });
