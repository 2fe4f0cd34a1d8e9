// API keys: create (the full key is shown once, on the page that answers the form), list with
// month-to-date spend against the limit, revoke after a confirmation page.
import { parseUsd } from '../../store/money.js';
import type { ApiKeyRecord } from '../../store/types.js';
import type { RateLimitsConfig } from '../../config-types.js';
import type { AccountContext } from '../context.js';
import { dateMinute, money } from '../format.js';
import { redirect, sendHtml } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { notFoundPage } from './errors.js';

const MAX_NAME = 100;

interface Draft {
  name: string;
  models: string[];
  limit: string;
  rpm: string;
  tpm: string;
}

/** A key's own rate limit from the form: empty = the gateway's default; else a positive whole number. */
function rateField(text: string): number | null | undefined {
  if (!text) return null;
  const n = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

async function keysPage(ctx: AccountContext, opts: { status?: number; notice?: Notice; draft?: Draft; created?: { key: ApiKeyRecord; secret: string } } = {}): Promise<void> {
  const { store } = ctx.deps;
  // Active keys first, newest first within each group.
  const keys = (await store.keys.list(ctx.account.id)).sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null) || b.id - a.id);
  const spent = new Map(await Promise.all(keys.map(async (k) => [k.id, await store.ledger.monthToDate(k.id)] as const)));
  const draft = opts.draft ?? { name: '', models: [], limit: '', rpm: '', tpm: '' };
  const defaults = ctx.config.rate_limits;
  const models = ctx.config.models;
  const notices: Record<string, Notice> = { revoked: { kind: 'success', text: 'The key was revoked. Requests that use it are refused from now on.' } };

  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'keys',
    title: 'API Keys',
    lead: 'Keys let programs use your credit. Each key can be limited to some models, to a monthly spend and to a rate.',
    notice: opts.notice ?? notices[ctx.url.searchParams.get('notice') ?? ''],
    body: html`
    ${opts.created && revealed(opts.created.key, opts.created.secret)}
    <section class="card">
      <h2>Your keys</h2>
      ${keys.length === 0 ? html`<p class="muted">No keys yet. Create one below.</p>` : html`
      <div class="table-wrap"><table class="keys">
        <thead><tr><th>Name</th><th>Key</th><th>Models</th><th>Rate limits</th><th>Created (UTC)</th><th>Last used</th><th>This month</th><th></th></tr></thead>
        <tbody>${keys.map((k) => keyRow(k, spent.get(k.id) ?? 0, defaults))}</tbody>
      </table></div>`}
    </section>
    <section class="card" id="create">
      <h2>Create new key</h2>
      <form method="post" action="/dashboard/keys" class="form-grid">
        ${csrfField(ctx)}
        <label>Name <input name="name" value="${draft.name}" maxlength="${MAX_NAME}" required placeholder="e.g. production backend"></label>
        <label>Monthly limit, USD <input name="monthly_limit" value="${draft.limit}" inputmode="decimal" placeholder="no limit">
          <span class="hint">Requests are refused once this key has spent this much in a calendar month (UTC).</span></label>
        <label>Requests per minute <input name="rpm" value="${draft.rpm}" inputmode="numeric" pattern="[0-9]*" placeholder="default: ${defaults.requests_per_minute}">
          <span class="hint">Leave empty for the gateway's default.</span></label>
        <label>Tokens per minute <input name="tpm" value="${draft.tpm}" inputmode="numeric" pattern="[0-9]*" placeholder="default: ${defaults.tokens_per_minute}">
          <span class="hint">Input plus output budget of the requests in any minute.</span></label>
        <fieldset class="span-2"><legend>Allowed models</legend>
          <p class="hint">Leave all unticked to allow every model your routing settings allow.</p>
          <div class="checks">${models.map((m) => html`<label class="check"><input type="checkbox" name="models" value="${m.id}"${draft.models.includes(m.id) ? html` checked` : ''}> <span>${m.display_name ?? m.id} <code>${m.id}</code></span></label>`)}</div>
        </fieldset>
        <div class="span-2"><button type="submit" class="button primary">Create key</button></div>
      </form>
    </section>`,
  }));
}

function revealed(key: ApiKeyRecord, secret: string): Html {
  return html`<section class="card reveal" aria-live="polite">
    <h2>Your new key “${key.name}”</h2>
    <p><strong>Copy it now: this is the only time the full key is shown.</strong> Only a fingerprint of it is stored, so it cannot be shown again; if you lose it, revoke it and create a new one.</p>
    <div class="copy-row"><input id="new-key" class="mono" value="${secret}" readonly aria-label="The new API key" data-testid="new-key">
      <button type="button" class="button" data-copy="new-key" hidden>Copy</button></div>
  </section>`;
}

/** "600 req/min · 2,000,000 tok/min", the gateway's defaults marked as such. */
function rateLimits(k: ApiKeyRecord, d: RateLimitsConfig): Html {
  const one = (own: number | null, fallback: number, unit: string) =>
    own === null ? html`<span class="muted">${fallback.toLocaleString('en-US')} ${unit} (default)</span>` : html`${own.toLocaleString('en-US')} ${unit}`;
  return html`${one(k.rpm, d.requests_per_minute, 'req/min')}<br>${one(k.tpm, d.tokens_per_minute, 'tok/min')}`;
}

function keyRow(k: ApiKeyRecord, spent: number, defaults: RateLimitsConfig): Html {
  const revoked = k.revokedAt !== null;
  const limit = k.monthlyLimitNano;
  return html`<tr class="${revoked ? 'revoked' : ''}" data-key-id="${k.id}">
    <td>${k.name}</td>
    <td><code>${k.prefix}…</code></td>
    <td>${k.allowedModels === null ? html`<span class="muted">All</span>` : k.allowedModels.map((m) => html`<span class="tag">${m}</span> `)}</td>
    <td class="nowrap rate-limits">${rateLimits(k, defaults)}</td>
    <td class="nowrap">${dateMinute(k.createdAt)}</td>
    <td class="nowrap">${k.lastUsedAt === null ? html`<span class="muted">Never</span>` : dateMinute(k.lastUsedAt)}</td>
    <td class="nowrap">${money(spent)}${limit === null ? html` <span class="muted">· no limit</span>` : html` <span class="muted">of ${money(limit)}</span>
      <meter min="0" max="${limit}" low="${Math.floor(limit * 0.8)}" high="${Math.floor(limit * 0.95)}" optimum="0" value="${Math.min(spent, limit)}"></meter>`}</td>
    <td class="actions">${revoked ? html`<span class="badge badge-muted">Revoked</span>` : html`<a class="button small danger-outline" href="/dashboard/keys/${k.id}/revoke">Revoke</a>`}</td>
  </tr>`;
}

async function createKey(ctx: AccountContext): Promise<void> {
  const known = new Set(ctx.config.models.map((m) => m.id));
  const draft: Draft = {
    name: (ctx.form.get('name') ?? '').trim(),
    models: ctx.form.getAll('models').filter((m) => known.has(m)),
    limit: (ctx.form.get('monthly_limit') ?? '').trim().replace(/^\$/, ''),
    rpm: (ctx.form.get('rpm') ?? '').trim().replace(/,/g, ''),
    tpm: (ctx.form.get('tpm') ?? '').trim().replace(/,/g, ''),
  };
  const refuse = (text: string) => keysPage(ctx, { status: 400, draft, notice: { kind: 'error', text } });
  if (!draft.name) return refuse('Give the key a name.');
  if (draft.name.length > MAX_NAME) return refuse(`Keep the name under ${MAX_NAME} characters.`);
  let limit: number | null = null;
  if (draft.limit) {
    try {
      limit = parseUsd(draft.limit);
    } catch {
      return refuse('The monthly limit must be an amount in USD, such as 20 or 12.50.');
    }
  }
  const rpm = rateField(draft.rpm), tpm = rateField(draft.tpm);
  if (rpm === undefined) return refuse('Requests per minute must be a whole number of at least 1, or empty for the default.');
  if (tpm === undefined) return refuse('Tokens per minute must be a whole number of at least 1, or empty for the default.');
  const created = await ctx.deps.store.keys.create({
    accountId: ctx.account.id, name: draft.name, allowedModels: draft.models.length > 0 ? draft.models : null, monthlyLimitNano: limit, rpm, tpm,
  });
  await keysPage(ctx, { status: 201, created });
}

/** The account's own active key named in the path, or null (someone else's key is "not found" too). */
async function ownKey(ctx: AccountContext): Promise<ApiKeyRecord | null> {
  const key = await ctx.deps.store.keys.get(Number(ctx.params[0]));
  return key && key.accountId === ctx.account.id ? key : null;
}

export const keyRoutes: Route[] = [
  page('/dashboard/keys', (ctx) => keysPage(ctx)),
  action('/dashboard/keys', createKey),

  page('/dashboard/keys/(\\d+)/revoke', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    if (key.revokedAt !== null) return redirect(ctx.res, '/dashboard/keys');
    sendHtml(ctx.res, 200, appPage(ctx, {
      section: 'keys',
      title: 'Revoke key',
      body: html`<section class="card narrow">
        <p>Revoke <strong>${key.name}</strong> (<code>${key.prefix}…</code>)?</p>
        <p>Every request that uses this key is refused from the moment you revoke it. This cannot be undone.</p>
        <form method="post" action="/dashboard/keys/${key.id}/revoke" class="row">
          ${csrfField(ctx)}
          <button type="submit" class="button danger">Revoke key</button>
          <a class="button" href="/dashboard/keys">Cancel</a>
        </form>
      </section>`,
    }));
  }),

  action('/dashboard/keys/(\\d+)/revoke', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    await ctx.deps.store.keys.revoke(key.id);
    redirect(ctx.res, '/dashboard/keys?notice=revoked');
  }),
];
