// The marketplace: every model with its offers, prices, context window and limits, marked usable or
// not under this account's routing settings and price cap.
import type { Offer } from '../../context.js';
import type { AccountContext } from '../context.js';
import { count, perMillion } from '../format.js';
import { sendHtml } from '../http.js';
import { html } from '../html.js';
import { appPage } from '../layout.js';
import { page, type Route } from '../router.js';
import { modelUsability } from '../usable.js';

const FEATURES: [keyof Offer['supports'], string][] = [['tools', 'Tools'], ['images', 'Images'], ['reasoning', 'Reasoning'], ['json_schema', 'JSON schema'], ['documents', 'Documents']];

async function modelsPage(ctx: AccountContext): Promise<void> {
  const routing = await ctx.deps.store.routing.get(ctx.account.id);
  const models = modelUsability(ctx.account.id, routing, ctx.config.models, ctx.deps.offers());
  const usable = models.filter((m) => m.usable).length;
  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'models',
    title: 'Models',
    lead: html`${usable} of ${models.length} models are usable under your <a href="/dashboard/routing">routing settings</a>. Prices are USD per million tokens.`,
    body: models.map((u) => html`<section class="card model${u.usable ? '' : ' unusable'}" data-model="${u.model.id}">
      <header class="model-head">
        <div><h2>${u.model.display_name ?? u.model.id}</h2><code class="model-id">${u.model.id}</code></div>
        ${u.usable ? html`<span class="badge badge-success">Usable</span>` : html`<span class="badge badge-muted">${u.reason}</span>`}
      </header>
      <dl class="facts">
        <div><dt>Context window</dt><dd>${count(u.model.context_window)} tokens</dd></div>
        <div><dt>Max output</dt><dd>${count(u.model.max_output_tokens)} tokens</dd></div>
        <div><dt>Offers</dt><dd>${u.offers.length}</dd></div>
      </dl>
      <div class="table-wrap" tabindex="0" role="region" aria-label="Offers of ${u.model.id}"><table class="offers">
        <thead><tr><th>Offer</th><th class="num">Input</th><th class="num">Output</th><th class="num">Cache read</th><th class="num">Cache write</th><th class="num">Max output</th><th>Supports</th></tr></thead>
        <tbody>${u.offers.map(({ offer: o, withinCap }) => html`<tr class="${withinCap ? '' : 'dim'}">
          <td class="nowrap" data-testid="offer-name">${o.provider.display_name ?? o.listing}${withinCap ? '' : html` <span class="badge badge-muted">Above price cap</span>`}
            ${o.provider.display_name !== undefined && html`<div class="sub"><code>${o.listing}</code></div>`}</td>
          <td class="num">${perMillion(o.prices.input)}</td><td class="num">${perMillion(o.prices.output)}</td>
          <td class="num">${perMillion(o.prices.cacheRead)}</td><td class="num">${perMillion(o.prices.cacheWrite)}</td>
          <td class="num">${count(o.maxOutputTokens)}</td>
          <td>${FEATURES.every(([f]) => o.supports[f]) ? html`<span class="muted">All features</span>` : FEATURES.filter(([f]) => o.supports[f]).map(([, label]) => html`<span class="tag">${label}</span> `)}</td>
        </tr>`)}</tbody>
      </table></div>
    </section>`),
  }));
}

export const modelRoutes: Route[] = [page('/dashboard/models', modelsPage)];
