// Routing settings: which models the account's keys may use (one control per model, and whether
// models added to the gateway later are allowed), a price cap, and the models that remain usable
// under them (what GET /v1/models lists for a key without restrictions). Settings that leave no
// model usable are never reported as a success: the form asks before saving them and the page
// warns after.
import type { RoutingSettings } from '../../context.js';
import { parseUsdPerMillion } from '../../store/money.js';
import type { AccountContext } from '../context.js';
import { perMillion } from '../format.js';
import { redirect, sendHtml } from '../http.js';
import { html, type Html } from '../html.js';
import { fieldMessage, invalidAttrs, notSaved, type FieldError } from '../field-error.js';
import { KEPT_NOTICE, takeKept } from '../kept-form.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { modelUsability, type ModelUsability } from '../usable.js';

const capText = (nanoPerToken: number | null) => (nanoPerToken === null ? '' : perMillion(nanoPerToken).slice(1));

interface Draft {
  /** Models added to the gateway later are allowed (no allow list). */
  allowNew: boolean;
  /** The models ticked as allowed. */
  allowed: string[];
  capInput: string;
  capOutput: string;
}

/** The one allow/deny choice per model that stored settings amount to. */
const allowedUnder = (s: RoutingSettings, ids: string[]) => ids.filter((id) => (s.allow === null || s.allow.includes(id)) && !s.deny.includes(id));

const usableCount = (u: ModelUsability[]) => u.filter((m) => m.usable).length;

function countText(usable: number, total: number): string {
  return `${usable} of ${total} ${total === 1 ? 'model is' : 'models are'} usable under these settings.`;
}

const NONE_USABLE = 'No model is usable under these settings: every request of every key would be refused.';

async function routingPage(ctx: AccountContext, opts: { status?: number; notice?: Notice; draft?: Draft; error?: FieldError; confirmNone?: boolean } = {}): Promise<void> {
  const settings = await ctx.deps.store.routing.get(ctx.account.id);
  const models = ctx.config.models;
  const d: Draft = opts.draft ?? {
    allowNew: settings.allow === null, allowed: allowedUnder(settings, models.map((m) => m.id)),
    capInput: capText(settings.priceCapInput), capOutput: capText(settings.priceCapOutput),
  };
  const offers = ctx.deps.offers();
  const usability = modelUsability(ctx.account.id, settings, models, offers);
  const usable = usableCount(usability);
  const checked = (on: boolean) => (on ? html` checked` : '');
  const saved = ctx.url.searchParams.get('notice') === 'saved';
  const notice: Notice | undefined = opts.notice ?? (saved ? usable === 0
    ? { kind: 'warning', text: 'Routing settings saved, but no model is usable under them: every request of every key is refused until you allow a model below.' }
    : { kind: 'success', text: `Routing settings saved. ${countText(usable, models.length)} They apply to the next request of every key.` } : undefined);

  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'routing',
    title: 'Routing',
    lead: 'Settings for every key of this account. A key can narrow them further with its own allowed models.',
    notice,
    body: html`
    <form method="post" action="/dashboard/routing" class="card stack" data-routing>
      ${csrfField(ctx)}
      <fieldset><legend>Models</legend>
        <p class="hint">Tick the models your keys may use. Prices are per million tokens, of the cheapest offer within your price cap.</p>
        <div class="table-wrap"><table class="routing stacked">
          <thead><tr><th>Allowed</th><th>Model</th><th>Usable offers</th><th class="num">Cheapest input</th><th class="num">Cheapest output</th><th>Status now</th></tr></thead>
          <tbody>${usability.map((u) => modelRow(u, d.allowed.includes(u.model.id)))}</tbody>
        </table></div>
      </fieldset>
      <fieldset><legend>Models added to the gateway later</legend>
        <label class="check"><input type="radio" name="allow_mode" value="all"${checked(d.allowNew)}> <span>Allowed, unless you untick them here</span></label>
        <label class="check"><input type="radio" name="allow_mode" value="list"${checked(!d.allowNew)}> <span>Not allowed until you tick them here</span></label>
      </fieldset>
      <fieldset><legend>Price cap</legend>
        <p class="hint">Offers priced above the cap are not used. Leave empty for no cap.</p>
        <div class="form-grid">
          <label>Input, USD per million tokens <input name="price_cap_input" value="${d.capInput}" inputmode="decimal" placeholder="no cap"${invalidAttrs(opts.error, 'price_cap_input')}>${fieldMessage(opts.error, 'price_cap_input')}</label>
          <label>Output, USD per million tokens <input name="price_cap_output" value="${d.capOutput}" inputmode="decimal" placeholder="no cap"${invalidAttrs(opts.error, 'price_cap_output')}>${fieldMessage(opts.error, 'price_cap_output')}</label>
        </div>
      </fieldset>
      ${opts.confirmNone
        ? html`<div class="notice notice-warning" role="alert" data-testid="confirm-none">
            <p><strong>${NONE_USABLE}</strong> Nothing was saved yet.</p>
            <div class="row"><button type="submit" class="button danger" name="confirm" value="none-usable">Save anyway and refuse every request</button>
            <a class="button" href="/dashboard/routing">Discard changes</a></div></div>`
        : html`<div class="row"><button type="submit" class="button primary">Save settings</button>
            <span class="muted small" data-testid="usable-count" data-usable-count aria-live="polite">${countText(usable, models.length)}</span></div>`}
    </form>`,
  }));
}

/** One model: its allow control, and what the saved settings make of it (data-* for the live count). */
function modelRow(u: ModelUsability, allowed: boolean): Html {
  const ok = u.offers.filter((o) => o.withinCap).map((o) => o.offer);
  const cheapest = ok.length > 0 ? ok.reduce((a, b) => (b.prices.input + b.prices.output < a.prices.input + a.prices.output ? b : a)) : null;
  const name = u.model.display_name ?? u.model.id;
  const prices = JSON.stringify(u.offers.map((o) => [o.offer.prices.input, o.offer.prices.output]));
  return html`<tr data-model="${u.model.id}" data-prices="${prices}">
    <td data-label="Allowed"><input type="checkbox" name="allow" value="${u.model.id}"${allowed ? html` checked` : ''} aria-label="Allow ${name}"></td>
    <td data-label="Model"><div class="wrap-value">${name}</div><div class="sub"><code class="wrap-value">${u.model.id}</code></div></td>
    <td data-label="Offers">${u.usable ? `${ok.length} of ${u.offers.length}` : html`<span class="muted">—</span>`}</td>
    <td data-label="Input price" class="num">${cheapest && u.usable ? perMillion(cheapest.prices.input) : '—'}</td>
    <td data-label="Output price" class="num">${cheapest && u.usable ? perMillion(cheapest.prices.output) : '—'}</td>
    <td data-label="Status">${u.usable ? html`<span class="badge badge-success" data-testid="usable">Usable</span>` : html`<span class="badge badge-muted" data-testid="not-usable">${u.reason}</span>`}</td>
  </tr>`;
}

function readDraft(ctx: AccountContext, form: URLSearchParams): Draft {
  const ticked = new Set(form.getAll('allow'));
  return {
    allowNew: form.get('allow_mode') !== 'list', allowed: ctx.config.models.map((m) => m.id).filter((id) => ticked.has(id)),
    capInput: (form.get('price_cap_input') ?? '').trim().replace(/^\$/, ''),
    capOutput: (form.get('price_cap_output') ?? '').trim().replace(/^\$/, ''),
  };
}

async function saveRouting(ctx: AccountContext): Promise<void> {
  const ids = ctx.config.models.map((m) => m.id);
  const ticked = new Set(ctx.form.getAll('allow'));
  const d = readDraft(ctx, ctx.form);
  const caps: Record<string, number | null> = {};
  for (const [field, text] of [['price_cap_input', d.capInput], ['price_cap_output', d.capOutput]]) {
    try {
      caps[field] = text === '' ? null : parseUsdPerMillion(text);
    } catch {
      const error = { field, text: 'A price cap is an amount in USD per million tokens with at most 3 decimals, such as 3 or 0.25.' };
      return routingPage(ctx, { status: 400, draft: d, error, notice: notSaved('The settings were not saved.') });
    }
  }
  // One list is stored: the unticked models denied (new models allowed), or the ticked ones allowed.
  const settings: RoutingSettings = {
    allow: d.allowNew ? null : d.allowed, deny: d.allowNew ? ids.filter((id) => !ticked.has(id)) : [],
    priceCapInput: caps.price_cap_input, priceCapOutput: caps.price_cap_output,
  };
  const usable = usableCount(modelUsability(ctx.account.id, settings, ctx.config.models, ctx.deps.offers()));
  if (usable === 0 && ctx.form.get('confirm') !== 'none-usable') {
    return routingPage(ctx, { status: 409, draft: d, confirmNone: true, notice: { kind: 'warning', text: `Not saved yet: ${NONE_USABLE.charAt(0).toLowerCase()}${NONE_USABLE.slice(1)} Change the settings, or confirm below the form.` } });
  }
  await ctx.deps.store.routing.set(ctx.account.id, settings);
  redirect(ctx.res, '/dashboard/routing?notice=saved');
}

export const routingRoutes: Route[] = [
  page('/dashboard/routing', (ctx) => {
    const kept = takeKept(ctx); // typed before the session ended (see kept-form.ts)
    return routingPage(ctx, kept ? { draft: readDraft(ctx, kept), notice: KEPT_NOTICE } : {});
  }),
  action('/dashboard/routing', saveRouting),
];
