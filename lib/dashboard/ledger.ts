// The Credits page's ledger: every movement of the balance (grants, top-ups, adjustments, and the
// charges of each UTC day summed, linked to that day's requests), newest first, adding up to the
// balance shown beside it. Amounts are exact (nano-USD): the lines sum to the balance to the last digit.
import type { BalanceSummary, EntryKind, LedgerEntry, Payment, Store } from '../store/types.js';
import { count, DAY_MS, isoDay, shortDay, usdColumn, when } from './format.js';
import { html, type Html } from './html.js';

/** Lines shown; older ones are summed into one "earlier movements" line. */
const SHOWN = 100;

export type LedgerLine =
  | { kind: Exclude<EntryKind, 'charge'>; time: number; amountNano: number; entry: LedgerEntry }
  | { kind: 'charges'; time: number; amountNano: number; day: number; charges: number }
  /** Movements posted after the list was read (requests finishing meanwhile): in the balance, not yet in a line of their own. */
  | { kind: 'unlisted'; time: number; amountNano: number }
  | { kind: 'earlier'; time: number; amountNano: number; lines: number };

export interface BalanceLedger {
  lines: LedgerLine[];
  /** The balance (its `balance` is what the lines add up to), held and available, read with the lines. */
  summary: BalanceSummary;
}

/**
 * The ledger and the balance it sums to. Queued charges are written first, and the balance is read
 * after the list, so it can only be ahead of it (by charges posted meanwhile), which one line says.
 */
export async function balanceLedger(store: Store, accountId: number): Promise<BalanceLedger> {
  await store.flush();
  const { credits, charges } = await store.ledger.statement(accountId);
  const summary = await store.ledger.balance(accountId);
  const { balance } = summary;
  // A day's charges sort at the end of the day (above that day's credits): they accrue all day.
  const lines: LedgerLine[] = [
    ...credits.map((e): LedgerLine => ({ kind: e.kind as Exclude<EntryKind, 'charge'>, time: e.createdAt, amountNano: e.amountNano, entry: e })),
    ...charges.map((d): LedgerLine => ({ kind: 'charges', time: d.day + DAY_MS - 1, amountNano: d.amountNano, day: d.day, charges: d.count })),
  ].sort((a, b) => b.time - a.time);
  const listed = lines.reduce((sum, l) => sum + l.amountNano, 0);
  if (lines.length > SHOWN) {
    const older = lines.splice(SHOWN - 1);
    lines.push({ kind: 'earlier', time: older[0].time, amountNano: older.reduce((sum, l) => sum + l.amountNano, 0), lines: older.length });
  }
  if (balance !== listed) lines.unshift({ kind: 'unlisted', time: Date.now(), amountNano: balance - listed });
  return { lines, summary };
}

const KIND_LABEL: Record<Exclude<EntryKind, 'charge'>, string> = { grant: 'Credit from the operator', topup: 'Top-up', adjustment: 'Adjustment' };

function describe(l: LedgerLine, receipts: Map<string, Payment>): Html {
  switch (l.kind) {
    case 'charges': {
      const day = isoDay(l.day);
      return html`<a href="/dashboard/requests?from=${day}&amp;to=${day}">Requests on ${shortDay(l.day)}</a>
        <div class="sub">${count(l.charges)} charged, UTC day</div>`;
    }
    case 'unlisted':
      return html`Posted while this page was made<div class="sub">requests finishing meanwhile; listed on reload</div>`;
    case 'earlier':
      return html`Earlier movements<div class="sub">${count(l.lines)} older lines, summed</div>`;
    case 'topup': {
      // The top-up's note is "payment <provider reference>".
      const payment = receipts.get(l.entry.note?.replace(/^payment /, '') ?? '');
      return html`${KIND_LABEL.topup}${payment && html`, ${payment.method === 'card' ? 'card' : 'stablecoin'}<div class="sub"><a href="/dashboard/credits/receipts/${payment.id}">Receipt</a></div>`}`;
    }
    default:
      return html`${KIND_LABEL[l.kind]}${l.entry.note && html`<div class="sub">${l.entry.note}</div>`}`;
  }
}

/** The ledger's card. `payments`: the account's recent payments, for each top-up's receipt link. */
export function ledgerSection(ledger: BalanceLedger, payments: Payment[]): Html {
  const receipts = new Map(payments.map((p) => [p.providerRef, p]));
  const amount = usdColumn([...ledger.lines.map((l) => l.amountNano), ledger.summary.balance]);
  return html`<section class="card" aria-labelledby="ledger-title">
    <h2 id="ledger-title">Balance history</h2>
    <p class="hint">Every credit and charge, newest first; they add up to your balance. Charges are summed per UTC day.</p>
    ${ledger.lines.length === 0 ? html`<p class="muted">No credit or charges yet.</p>` : html`<div class="table-wrap"><table class="ledger">
      <thead><tr><th class="ledger-date">Date</th><th>Movement</th><th class="num">Amount</th></tr></thead>
      <tbody>${ledger.lines.map((l) => {
        const date = l.kind === 'charges' ? html`<time datetime="${isoDay(l.day)}">${isoDay(l.day)}</time>` : l.kind === 'unlisted' ? 'Now' : l.kind === 'earlier' ? html`to ${isoDay(l.time)}` : when(l.time);
        return html`<tr data-ledger="${l.kind}">
        <td class="nowrap ledger-date">${date}</td>
        <td>${describe(l, receipts)}<div class="sub ledger-date-under">${date}</div></td>
        <td class="num${l.amountNano < 0 ? ' debit' : ''}" data-nano="${l.amountNano}">${amount(l.amountNano)}</td></tr>`;
      })}</tbody>
      <tfoot><tr><td class="ledger-date"></td><th scope="row">Balance</th><td class="num" data-testid="ledger-total" data-nano="${ledger.summary.balance}">${amount(ledger.summary.balance)}</td></tr></tfoot>
    </table></div>`}
  </section>`;
}
