// Credits: balance, top-up by card or stablecoin (Stripe Checkout), every movement of the balance
// (lib/dashboard/ledger.ts), payments with a receipt each. The balance changes when Stripe confirms
// a payment (webhook), not when the payer comes back to this page; coming back from cancelling
// expires the checkout, so a cancelled payment says so at once instead of staying pending.
import type { Payment, PaymentMethod } from '../../store/types.js';
import type { AccountContext } from '../context.js';
import { money, usd, when } from '../format.js';
import { balanceLedger, ledgerSection } from '../ledger.js';
import { redirect, sendHtml, siteOrigin } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { cancelCheckout, paymentMethods, startCheckout, topUpAmounts } from '../stripe.js';
import { errorPage, notFoundPage } from './errors.js';

const METHOD_LABEL: Record<PaymentMethod, string> = { card: 'Card', stablecoin: 'Stablecoin' };
const STATUS_BADGE: Record<Payment['status'], [string, string]> = {
  pending: ['badge-warning', 'Pending'], confirmed: ['badge-success', 'Confirmed'], failed: ['badge-error', 'Failed'], cancelled: ['badge-muted', 'Cancelled'],
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

function paymentRow(p: Payment): Html {
  const ref = html`<code class="ref" title="${p.providerRef}">${p.providerRef}</code>`;
  return html`<tr data-payment="${p.providerRef}">
    <td data-label="Date">${when(p.createdAt)}</td><td data-label="Amount" class="num">${usd(p.amountNano)}</td><td data-label="Method">${METHOD_LABEL[p.method]}</td>
    <td data-label="Status"><span class="badge ${STATUS_BADGE[p.status][0]}" data-testid="payment-status">${STATUS_BADGE[p.status][1]}</span>
      ${p.status === 'failed' && p.failureReason !== null && html`<div class="sub" data-testid="failure-reason">${p.failureReason}</div>`}
      ${p.status === 'cancelled' && html`<div class="sub">Nothing was charged</div>`}</td>
    <td data-label="Reference">${p.status === 'confirmed' ? html`<a href="/dashboard/credits/receipts/${p.id}">Receipt</a><div class="sub">${ref}</div>` : ref}</td></tr>`;
}

async function creditsPage(ctx: AccountContext, opts: { status?: number; notice?: Notice } = {}): Promise<void> {
  const { store } = ctx.deps;
  // One reading of the balance for the figures and the ledger, so they agree.
  const [ledger, payments] = await Promise.all([balanceLedger(store, ctx.account.id), store.payments.list(ctx.account.id, { limit: 50 })]);
  const bal = ledger.summary;
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
    ${ledgerSection(ledger, payments)}
    <section class="card">
      <h2>Payments</h2>
      ${payments.length === 0 ? html`<p class="muted">No payments yet.</p>` : html`<div class="table-wrap"><table class="payments stacked">
        <thead><tr><th>Date</th><th class="num">Amount</th><th>Method</th><th>Status</th><th>Reference</th></tr></thead>
        <tbody>${payments.map(paymentRow)}</tbody>
      </table></div>`}
    </section>`,
  }));
}

/** Stripe sent the payer back from cancelling: expire that checkout, then show the page without the session in its address (a reload does nothing more). */
async function creditsReturn(ctx: AccountContext): Promise<void> {
  const cfg = ctx.config.stripe;
  if (ctx.url.searchParams.get('payment') !== 'cancelled' || !cfg || !ctx.url.searchParams.has('session')) return creditsPage(ctx);
  try {
    await cancelCheckout(cfg, ctx.deps.store, ctx.account.id, ctx.url.searchParams.get('session'));
  } catch (err) {
    // Stripe refused or could not be reached: the session expires by itself within a day.
    ctx.deps.log('warn', 'could not expire a cancelled Stripe checkout', { account: ctx.account.id, err });
  }
  redirect(ctx.res, '/dashboard/credits?payment=cancelled');
}

async function receiptPage(ctx: AccountContext): Promise<void> {
  const payment = await ctx.deps.store.payments.byId(Number(ctx.params[0]));
  // Another account's payment, or one not confirmed, has no receipt: the same answer as none at all.
  if (!payment || payment.accountId !== ctx.account.id || payment.status !== 'confirmed') return notFoundPage(ctx, 'There is no such receipt.');
  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'credits',
    title: 'Receipt',
    lead: html`Credit added to the balance of ${ctx.account.email}.`,
    actions: html`<a class="button" href="/dashboard/credits">Back to Credits</a>`,
    body: html`<section class="card receipt">
      <dl class="pairs">
        <dt>Amount</dt><dd class="num" data-testid="receipt-amount"><strong>${usd(payment.amountNano)}</strong></dd>
        <dt>Method</dt><dd data-testid="receipt-method">${METHOD_LABEL[payment.method]}, through Stripe</dd>
        <dt>Paid</dt><dd data-testid="receipt-date">${when(payment.updatedAt)}</dd>
        <dt>Started</dt><dd>${when(payment.createdAt)}</dd>
        <dt>Reference</dt><dd><code data-testid="receipt-ref">${payment.providerRef}</code><div class="hint">Stripe's id for this payment; quote it in any question about it.</div></dd>
        <dt>Receipt number</dt><dd>${payment.id}</dd>
      </dl>
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
  page('/dashboard/credits', creditsReturn),
  page('/dashboard/credits/receipts/(\\d+)', receiptPage),
  action('/dashboard/credits/checkout', checkout),
];
