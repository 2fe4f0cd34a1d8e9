// Credits: balance, top-up by card or stablecoin (Stripe Checkout), payment history. The balance
// changes when Stripe confirms a payment (webhook), not when the payer comes back to this page.
import type { Payment, PaymentMethod } from '../../store/types.js';
import type { AccountContext } from '../context.js';
import { dateMinute, money, usd } from '../format.js';
import { redirect, sendHtml, siteOrigin } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { paymentMethods, startCheckout, topUpAmounts } from '../stripe.js';
import { errorPage } from './errors.js';

const METHOD_LABEL: Record<PaymentMethod, string> = { card: 'Card', stablecoin: 'Stablecoin' };
const STATUS_BADGE: Record<Payment['status'], [string, string]> = {
  pending: ['badge-warning', 'Pending'], confirmed: ['badge-success', 'Confirmed'], failed: ['badge-error', 'Failed'],
};

const RETURN_NOTICES: Record<string, Notice> = {
  success: { kind: 'info', text: 'Thank you. Your payment is being confirmed; the credit appears in your balance as soon as it is.' },
  cancelled: { kind: 'info', text: 'The payment was cancelled. Nothing was charged.' },
};

function topUpForm(ctx: AccountContext): Html {
  const cfg = ctx.config.stripe;
  if (!cfg) {
    return html`<p>Payments are not enabled on this gateway.</p>
      <p class="muted">The operator can add credit to your account from the command line:
      <code>gateway credits grant --account ${ctx.account.email} --amount 20</code></p>`;
  }
  const amounts = topUpAmounts(cfg);
  const methods = paymentMethods(cfg);
  return html`<form method="post" action="/dashboard/credits/checkout" class="stack">
    ${csrfField(ctx)}
    <fieldset><legend>Amount</legend>
      <div class="choices">${amounts.map((a, i) => html`<label class="choice"><input type="radio" name="amount" value="${a}"${i === 0 ? html` checked` : ''}><span>${usd(a)}</span></label>`)}</div>
    </fieldset>
    <fieldset><legend>Pay with</legend>
      <div class="choices">${methods.map((m, i) => html`<label class="choice"><input type="radio" name="method" value="${m}"${i === 0 ? html` checked` : ''}><span>${m === 'card' ? 'Card' : 'Stablecoin (USDC and others)'}</span></label>`)}</div>
    </fieldset>
    <div><button type="submit" class="button primary">Continue to payment</button></div>
    <p class="hint">You pay on Stripe's secure page. Your balance is credited once Stripe confirms the payment${cfg.stablecoin ? '; stablecoin payments can take a few minutes' : ''}.</p>
  </form>`;
}

async function creditsPage(ctx: AccountContext, opts: { status?: number; notice?: Notice } = {}): Promise<void> {
  const { store } = ctx.deps;
  const [bal, payments] = await Promise.all([store.ledger.balance(ctx.account.id), store.payments.list(ctx.account.id, { limit: 50 })]);
  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'credits',
    title: 'Credits',
    lead: 'Requests are paid from this prepaid balance.',
    notice: opts.notice ?? RETURN_NOTICES[ctx.url.searchParams.get('payment') ?? ''],
    body: html`
    <section class="stats three">
      <div class="stat"><div class="stat-label">Balance</div><div class="stat-value" data-testid="balance">${money(bal.balance)}</div></div>
      <div class="stat"><div class="stat-label">Held</div><div class="stat-value" data-testid="held">${money(bal.held)}</div><div class="stat-sub">reserved by requests in progress</div></div>
      <div class="stat"><div class="stat-label">Available</div><div class="stat-value" data-testid="available">${money(bal.available)}</div></div>
    </section>
    <section class="card"><h2>Top up</h2>${topUpForm(ctx)}</section>
    <section class="card">
      <h2>Payment history</h2>
      ${payments.length === 0 ? html`<p class="muted">No payments yet.</p>` : html`<div class="table-wrap"><table class="payments">
        <thead><tr><th>Date (UTC)</th><th class="num">Amount</th><th>Method</th><th>Status</th><th>Reference</th></tr></thead>
        <tbody>${payments.map((p) => html`<tr data-payment="${p.providerRef}">
          <td class="nowrap">${dateMinute(p.createdAt)}</td><td class="num">${usd(p.amountNano)}</td><td>${METHOD_LABEL[p.method]}</td>
          <td><span class="badge ${STATUS_BADGE[p.status][0]}" data-testid="payment-status">${STATUS_BADGE[p.status][1]}</span></td>
          <td><code class="ref" title="${p.providerRef}">${p.providerRef}</code></td></tr>`)}</tbody>
      </table></div>`}
    </section>`,
  }));
}

async function checkout(ctx: AccountContext): Promise<void> {
  const cfg = ctx.config.stripe;
  if (!cfg) return errorPage(ctx, 404, 'Payments are not enabled', 'Payments are not enabled on this gateway.');
  const amountNano = Number(ctx.form.get('amount'));
  const method = ctx.form.get('method') as PaymentMethod;
  if (!topUpAmounts(cfg).includes(amountNano) || !paymentMethods(cfg).includes(method)) {
    return creditsPage(ctx, { status: 400, notice: { kind: 'error', text: 'Choose one of the amounts and payment methods offered.' } });
  }
  let url: string;
  try {
    url = await startCheckout(cfg, ctx.deps.store, {
      account: ctx.account, amountNano, method, returnTo: `${siteOrigin(ctx.req, ctx.config.dashboard.public_url)}/dashboard/credits`,
    });
  } catch (err) {
    ctx.deps.log('error', 'could not start a Stripe checkout', { account: ctx.account.id, err });
    return creditsPage(ctx, { status: 502, notice: { kind: 'error', text: 'The payment could not be started. Please try again in a moment.' } });
  }
  redirect(ctx.res, url);
}

export const creditRoutes: Route[] = [
  page('/dashboard/credits', (ctx) => creditsPage(ctx)),
  action('/dashboard/credits/checkout', checkout),
];
