// Routing settings: allowed and denied models and a price cap for the whole account, and the
// models that remain usable under them (what GET /v1/models lists for a key without restrictions).
import type { RoutingSettings } from '../../context.js';
import { parseUsdPerMillion } from '../../store/money.js';
import type { AccountContext } from '../context.js';
import { perMillion } from '../format.js';
import { redirect, sendHtml } from '../http.js';
import { html } from '../html.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { modelUsability } from '../usable.js';

const capText = (nanoPerToken: number | null) => (nanoPerToken === null ? '' : perMillion(nanoPerToken).slice(1));

interface Draft {
  allowAll: boolean;
  allow: string[];
  deny: string[];
  capInput: string;
  capOutput: string;
}

async function routingPage(ctx: AccountContext, opts: { status?: number; notice?: Notice; draft?: Draft } = {}): Promise<void> {
  const settings = await ctx.deps.store.routing.get(ctx.account.id);
  const d: Draft = opts.draft ?? {
    allowAll: settings.allow === null, allow: settings.allow ?? [], deny: settings.deny,
    capInput: capText(settings.priceCapInput), capOutput: capText(settings.priceCapOutput),
  };
  const models = ctx.config.models;
  const usability = modelUsability(ctx.account.id, settings, models, ctx.deps.offers());
  const checked = (on: boolean) => (on ? html` checked` : '');
  const notices: Record<string, Notice> = { saved: { kind: 'success', text: 'Routing settings saved. They apply to the next request of every key.' } };

  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'routing',
    title: 'Routing',
    lead: 'Settings for every key of this account. A key can narrow them further with its own allowed models.',
    notice: opts.notice ?? notices[ctx.url.searchParams.get('notice') ?? ''],
    body: html`
    <form method="post" action="/dashboard/routing" class="card stack">
      ${csrfField(ctx)}
      <fieldset><legend>Allowed models</legend>
        <label class="check"><input type="radio" name="allow_mode" value="all"${checked(d.allowAll)}> <span>Every model</span></label>
        <label class="check"><input type="radio" name="allow_mode" value="list"${checked(!d.allowAll)}> <span>Only the models ticked here:</span></label>
        <div class="checks indent">${models.map((m) => html`<label class="check"><input type="checkbox" name="allow" value="${m.id}"${checked(d.allow.includes(m.id))}> <span>${m.display_name ?? m.id} <code>${m.id}</code></span></label>`)}</div>
      </fieldset>
      <fieldset><legend>Denied models</legend>
        <p class="hint">Never used, whatever else allows them.</p>
        <div class="checks">${models.map((m) => html`<label class="check"><input type="checkbox" name="deny" value="${m.id}"${checked(d.deny.includes(m.id))}> <span>${m.display_name ?? m.id} <code>${m.id}</code></span></label>`)}</div>
      </fieldset>
      <fieldset><legend>Price cap</legend>
        <p class="hint">Offers priced above the cap are not used. Leave empty for no cap.</p>
        <div class="form-grid">
          <label>Input, USD per million tokens <input name="price_cap_input" value="${d.capInput}" inputmode="decimal" placeholder="no cap"></label>
          <label>Output, USD per million tokens <input name="price_cap_output" value="${d.capOutput}" inputmode="decimal" placeholder="no cap"></label>
        </div>
      </fieldset>
      <div><button type="submit" class="button primary">Save settings</button></div>
    </form>
    <section class="card">
      <h2>Models under these settings</h2>
      <div class="table-wrap"><table>
        <thead><tr><th>Model</th><th>Usable offers</th><th class="num">Cheapest input</th><th class="num">Cheapest output</th><th>Status</th></tr></thead>
        <tbody>${usability.map((u) => {
          const ok = u.offers.filter((o) => o.withinCap).map((o) => o.offer);
          const cheapest = ok.length > 0 ? ok.reduce((a, b) => (b.prices.input + b.prices.output < a.prices.input + a.prices.output ? b : a)) : null;
          return html`<tr data-model="${u.model.id}">
            <td>${u.model.display_name ?? u.model.id}<div class="sub"><code>${u.model.id}</code></div></td>
            <td>${u.usable ? `${ok.length} of ${u.offers.length}` : html`<span class="muted">—</span>`}</td>
            <td class="num">${cheapest && u.usable ? perMillion(cheapest.prices.input) : '—'}</td>
            <td class="num">${cheapest && u.usable ? perMillion(cheapest.prices.output) : '—'}</td>
            <td>${u.usable ? html`<span class="badge badge-success" data-testid="usable">Usable</span>` : html`<span class="badge badge-muted" data-testid="not-usable">${u.reason}</span>`}</td>
          </tr>`;
        })}</tbody>
      </table></div>
      <p class="hint">Prices are per million tokens.</p>
    </section>`,
  }));
}

async function saveRouting(ctx: AccountContext): Promise<void> {
  const known = new Set(ctx.config.models.map((m) => m.id));
  const pick = (name: string) => ctx.form.getAll(name).filter((id) => known.has(id));
  const d: Draft = {
    allowAll: ctx.form.get('allow_mode') !== 'list', allow: pick('allow'), deny: pick('deny'),
    capInput: (ctx.form.get('price_cap_input') ?? '').trim().replace(/^\$/, ''),
    capOutput: (ctx.form.get('price_cap_output') ?? '').trim().replace(/^\$/, ''),
  };
  const cap = (text: string) => (text === '' ? null : parseUsdPerMillion(text));
  let patch: RoutingSettings;
  try {
    patch = { allow: d.allowAll ? null : d.allow, deny: d.deny, priceCapInput: cap(d.capInput), priceCapOutput: cap(d.capOutput) };
  } catch {
    return routingPage(ctx, { status: 400, draft: d, notice: { kind: 'error', text: 'A price cap is an amount in USD per million tokens with at most 3 decimals, such as 3 or 0.25.' } });
  }
  await ctx.deps.store.routing.set(ctx.account.id, patch);
  redirect(ctx.res, '/dashboard/routing?notice=saved');
}

export const routingRoutes: Route[] = [
  page('/dashboard/routing', (ctx) => routingPage(ctx)),
  action('/dashboard/routing', saveRouting),
];
