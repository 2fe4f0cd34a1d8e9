// API keys: create (post/redirect/get: the full key is shown once, on the page the form redirects
// to, and a reload or Back creates nothing), list with month-to-date spend and holds against the
// limit, edit a key's name, limits and models, revoke after a confirmation page.
import { formatUsd, parseUsd } from '../../store/money.js';
import type { ApiKeyRecord, KeyPatch } from '../../store/types.js';
import type { ModelConfig, RateLimitsConfig } from '../../config-types.js';
import type { AccountContext } from '../context.js';
import { dateMinute, money } from '../format.js';
import { redirect, sendHtml } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage, csrfField, type Notice } from '../layout.js';
import { fieldMessage, invalidAttrs, notSaved, type FieldError } from '../field-error.js';
import { KEPT_NOTICE, takeKept } from '../kept-form.js';
import { holdSecret, takeSecret } from '../reveal.js';
import { action, page, type Route } from '../router.js';
import { modelUsability } from '../usable.js';
import { notFoundPage } from './errors.js';

const MAX_NAME = 100;

interface Draft {
  name: string;
  models: string[];
  limit: string;
  rpm: string;
  tpm: string;
}

const emptyDraft: Draft = { name: '', models: [], limit: '', rpm: '', tpm: '' };

const draftOf = (k: ApiKeyRecord): Draft => ({
  name: k.name, models: k.allowedModels ?? [], limit: k.monthlyLimitNano === null ? '' : formatUsd(k.monthlyLimitNano).slice(1),
  rpm: k.rpm === null ? '' : String(k.rpm), tpm: k.tpm === null ? '' : String(k.tpm),
});

/** One sentence on why a key under its limit can still be refused. */
const HOLD_SENTENCE = 'Before a request runs, its largest possible cost (from its max_tokens) is held against the key\'s limit and the unused part is returned when it ends, so a request is refused when this month\'s spend, the holds of requests in flight and its own hold together would pass the limit.';

/** A key's own rate limit from the form: empty = the gateway's default; else a positive whole number. */
function rateField(text: string): number | null | undefined {
  if (!text) return null;
  const n = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

const sameName = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

async function keysPage(ctx: AccountContext, opts: { status?: number; notice?: Notice; draft?: Draft; error?: FieldError; created?: { key: ApiKeyRecord; secret: string | null } } = {}): Promise<void> {
  const { store } = ctx.deps;
  const all = (await store.keys.list(ctx.account.id)).sort((a, b) => b.id - a.id);
  const showRevoked = ctx.url.searchParams.get('revoked') === 'show';
  const revokedCount = all.filter((k) => k.revokedAt !== null).length;
  // Active keys first, newest first within each group; revoked ones only when asked for.
  const keys = [...all.filter((k) => k.revokedAt === null), ...(showRevoked ? all.filter((k) => k.revokedAt !== null) : [])];
  const [spent, held] = await Promise.all([
    Promise.all(keys.map(async (k) => [k.id, await store.ledger.monthToDate(k.id)] as const)).then((e) => new Map(e)),
    store.ledger.heldByKey(ctx.account.id),
  ]);
  const defaults = ctx.config.rate_limits;
  const notices: Record<string, Notice> = {
    revoked: { kind: 'success', text: 'The key was revoked. Requests that use it are refused from now on.' },
    updated: { kind: 'success', text: 'The key was updated. Its next request uses the new settings.' },
  };
  const toggle = revokedCount === 0 ? '' : showRevoked
    ? html`<a href="/dashboard/keys">Hide revoked keys</a>`
    : html`<a href="/dashboard/keys?revoked=show">Show ${revokedCount} revoked ${revokedCount === 1 ? 'key' : 'keys'}</a>`;
  const anyLimit = keys.some((k) => k.monthlyLimitNano !== null);

  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'keys',
    title: 'API Keys',
    lead: 'Keys let programs use your credit. Each key can be limited to some models, to a monthly spend and to a rate.',
    notice: opts.notice ?? notices[ctx.url.searchParams.get('notice') ?? ''],
    body: html`
    ${opts.created && revealed(opts.created.key, opts.created.secret)}
    <section class="card">
      <div class="card-head"><h2>Your keys</h2>${toggle && html`<span class="small">${toggle}</span>`}</div>
      ${keys.length === 0 ? html`<p class="muted">${revokedCount > 0 ? 'No active keys.' : 'No keys yet.'} Create one below.</p>` : html`
      <div class="table-wrap"><table class="keys stacked">
        <thead><tr><th>Name</th><th>Models</th><th>Rate limits</th><th>Created · last used (UTC)</th><th>This month</th><th><span class="vh">Actions</span></th></tr></thead>
        <tbody>${keys.map((k) => keyRow(k, spent.get(k.id) ?? 0, held.get(k.id) ?? 0, defaults))}</tbody>
      </table></div>
      ${anyLimit && html`<p class="hint" id="hold-note">${HOLD_SENTENCE}</p>`}`}
    </section>
    <section class="card" id="create">
      <h2>Create new key</h2>
      <form method="post" action="/dashboard/keys" class="form-grid">
        ${csrfField(ctx)}
        ${keyFields(opts.draft ?? emptyDraft, defaults, await modelChoices(ctx), opts.error)}
        <div class="span-2"><button type="submit" class="button primary">Create key</button></div>
      </form>
    </section>`,
  }));
}

/** The models a key may be limited to, with why one is of no use under the account's routing settings. */
async function modelChoices(ctx: AccountContext): Promise<{ model: ModelConfig; reason: string | null }[]> {
  const routing = await ctx.deps.store.routing.get(ctx.account.id);
  return modelUsability(ctx.account.id, routing, ctx.config.models, ctx.deps.offers()).map((u) => ({ model: u.model, reason: u.reason }));
}

function keyFields(draft: Draft, defaults: RateLimitsConfig, models: { model: ModelConfig; reason: string | null }[], error?: FieldError): Html {
  const bad = (field: string) => invalidAttrs(error, field);
  const why = (field: string) => fieldMessage(error, field);
  return html`<label>Name <input name="name" value="${draft.name}" maxlength="${MAX_NAME}" required placeholder="e.g. production backend"${bad('name')}>${why('name')}</label>
    <label>Monthly limit, USD <input name="monthly_limit" value="${draft.limit}" inputmode="decimal" placeholder="no limit"${bad('monthly_limit')}>${why('monthly_limit')}
      <span class="hint">Requests are refused once this key would spend more than this in a calendar month (UTC).</span></label>
    <label>Requests per minute <input name="rpm" value="${draft.rpm}" inputmode="numeric" pattern="[0-9]*" placeholder="default: ${defaults.requests_per_minute}"${bad('rpm')}>${why('rpm')}
      <span class="hint">Leave empty for the gateway's default.</span></label>
    <label>Tokens per minute <input name="tpm" value="${draft.tpm}" inputmode="numeric" pattern="[0-9]*" placeholder="default: ${defaults.tokens_per_minute}"${bad('tpm')}>${why('tpm')}
      <span class="hint">Input plus output budget of the requests in any minute.</span></label>
    <fieldset class="span-2"><legend>Allowed models</legend>
      <p class="hint">Leave all unticked to allow every model your routing settings allow.</p>
      <div class="checks">${models.map(({ model: m, reason }) => html`<label class="check"><input type="checkbox" name="models" value="${m.id}"${draft.models.includes(m.id) ? html` checked` : ''}> <span>${m.display_name ?? m.id} <code>${m.id}</code>${reason && html`<span class="hint">Not usable now: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}.</span>`}</span></label>`)}</div>
    </fieldset>`;
}

function revealed(key: ApiKeyRecord, secret: string | null): Html {
  if (secret === null) {
    return html`<section class="card reveal" data-testid="key-created">
      <h2>Key “${key.name}” was created</h2>
      <p>Its full key was shown once, when it was created, and cannot be shown again. If you did not copy it, revoke this key and create a new one.</p>
    </section>`;
  }
  return html`<section class="card reveal" aria-live="polite" data-testid="key-created">
    <h2>Your new key “${key.name}”</h2>
    <p><strong>Copy it now: this is the only time the full key is shown.</strong> Only a fingerprint of it is stored, so it cannot be shown again, not even by reloading this page; if you lose it, revoke it and create a new one.</p>
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

/** This month's spend, the holds of requests in flight, and the limit they count against. */
function monthCell(spent: number, held: number, limit: number | null): Html {
  const heldText = held > 0 && html`<div class="sub">+ ${money(held)} held</div>`;
  if (limit === null) return html`${money(spent)} <span class="muted">· no limit</span>${heldText}`;
  const used = spent + held;
  const reached = used >= limit;
  return html`<span${reached ? html` class="error-text"` : ''}>${money(spent)}</span> <span class="muted">of ${money(limit)}</span>${heldText}
    <meter min="0" max="${limit}" low="${Math.floor(limit * 0.8)}" high="${Math.floor(limit * 0.95)}" optimum="0" value="${Math.min(used, limit)}" aria-label="Share of the monthly limit used"></meter>
    ${reached && html`<span class="badge badge-error" data-testid="limit-reached">Limit reached</span>`}`;
}

function keyRow(k: ApiKeyRecord, spent: number, held: number, defaults: RateLimitsConfig): Html {
  const revoked = k.revokedAt !== null;
  const named = html`<span class="vh"> key “${k.name}”</span>`;
  return html`<tr class="${revoked ? 'revoked' : ''}" data-key-id="${k.id}">
    <td data-label="Name" class="key-name"><div class="wrap-value">${k.name}</div><div class="sub"><code>${k.prefix}…</code></div></td>
    <td data-label="Models"><div class="wrap-value">${k.allowedModels === null ? html`<span class="muted">All</span>` : k.allowedModels.map((m) => html`<span class="tag">${m}</span> `)}</div></td>
    <td data-label="Rate limits" class="rate-limits">${rateLimits(k, defaults)}</td>
    <td data-label="Created · used" class="nowrap">${dateMinute(k.createdAt)}<div class="sub">${k.lastUsedAt === null ? 'Never used' : html`Used ${dateMinute(k.lastUsedAt)}`}</div></td>
    <td data-label="This month" class="nowrap">${monthCell(spent, held, k.monthlyLimitNano)}</td>
    <td class="actions">${revoked ? html`<span class="badge badge-muted">Revoked</span>` : html`<a class="button small" href="/dashboard/keys/${k.id}/edit">Edit${named}</a>
      <a class="button small danger-outline" href="/dashboard/keys/${k.id}/revoke">Revoke${named}</a>`}</td>
  </tr>`;
}

function readDraft(ctx: AccountContext, form = ctx.form): Draft {
  const known = new Set(ctx.config.models.map((m) => m.id));
  return {
    name: (form.get('name') ?? '').trim(),
    models: form.getAll('models').filter((m) => known.has(m)),
    limit: (form.get('monthly_limit') ?? '').trim().replace(/^\$/, '').replace(/,/g, ''),
    rpm: (form.get('rpm') ?? '').trim().replace(/,/g, ''),
    tpm: (form.get('tpm') ?? '').trim().replace(/,/g, ''),
  };
}

/** The form's values for the store, or why they cannot be used; `self` is the key being edited. */
async function checkDraft(ctx: AccountContext, d: Draft, self: ApiKeyRecord | null): Promise<Required<KeyPatch> | FieldError> {
  const name = (text: string) => ({ field: 'name', text });
  if (!d.name) return name('Give the key a name.');
  if (d.name.length > MAX_NAME) return name(`Keep the name under ${MAX_NAME} characters.`);
  const others = (await ctx.deps.store.keys.list(ctx.account.id)).filter((k) => k.revokedAt === null && k.id !== self?.id);
  if (others.some((k) => sameName(k.name, d.name))) return name(`You already have an active key named “${d.name}”. Give this one another name, so the two can be told apart.`);
  let limit: number | null = null;
  if (d.limit) {
    const field = 'monthly_limit';
    try {
      limit = parseUsd(d.limit);
    } catch {
      return { field, text: 'The monthly limit must be an amount in USD, such as 20 or 12.50.' };
    }
    if (limit === 0) return { field, text: 'A monthly limit of $0 would refuse every request. Leave it empty for no limit, or revoke the key to stop it.' };
  }
  const rpm = rateField(d.rpm), tpm = rateField(d.tpm);
  if (rpm === undefined) return { field: 'rpm', text: 'Requests per minute must be a whole number of at least 1, or empty for the default.' };
  if (tpm === undefined) return { field: 'tpm', text: 'Tokens per minute must be a whole number of at least 1, or empty for the default.' };
  return { name: d.name, allowedModels: d.models.length > 0 ? d.models : null, monthlyLimitNano: limit, rpm, tpm };
}

async function createKey(ctx: AccountContext): Promise<void> {
  const draft = readDraft(ctx);
  const checked = await checkDraft(ctx, draft, null);
  if ('field' in checked) return keysPage(ctx, { status: 400, draft, error: checked, notice: notSaved('The key was not created.') });
  const { key, secret } = await ctx.deps.store.keys.create({ accountId: ctx.account.id, ...checked });
  holdSecret(ctx, key.id, secret);
  redirect(ctx.res, `/dashboard/keys/${key.id}/created`);
}

/** What the owner typed before their session ended, to fill the form in again (see kept-form.ts). */
function keptDraft(ctx: AccountContext): { draft?: Draft; notice?: Notice } {
  const kept = takeKept(ctx);
  return kept ? { draft: readDraft(ctx, kept), notice: KEPT_NOTICE } : {};
}

/** The account's own key named in the path, or null (someone else's key is "not found" too). */
async function ownKey(ctx: AccountContext): Promise<ApiKeyRecord | null> {
  const key = await ctx.deps.store.keys.get(Number(ctx.params[0]));
  return key && key.accountId === ctx.account.id ? key : null;
}

async function editPage(ctx: AccountContext, key: ApiKeyRecord, opts: { status?: number; notice?: Notice; draft?: Draft; error?: FieldError } = {}): Promise<void> {
  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'keys',
    title: 'Edit key',
    lead: html`<span class="wrap-value">${key.name}</span> <code>${key.prefix}…</code>`,
    notice: opts.notice,
    body: html`<section class="card">
      <form method="post" action="/dashboard/keys/${key.id}/edit" class="form-grid">
        ${csrfField(ctx)}
        ${keyFields(opts.draft ?? draftOf(key), ctx.config.rate_limits, await modelChoices(ctx), opts.error)}
        <p class="hint span-2">${HOLD_SENTENCE}</p>
        <div class="span-2 row"><button type="submit" class="button primary">Save changes</button> <a class="button" href="/dashboard/keys">Cancel</a></div>
      </form>
    </section>`,
  }));
}

export const keyRoutes: Route[] = [
  page('/dashboard/keys', (ctx) => keysPage(ctx, keptDraft(ctx))),
  action('/dashboard/keys', createKey),

  page('/dashboard/keys/(\\d+)/created', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    await keysPage(ctx, { created: { key, secret: takeSecret(ctx, key.id) } });
  }),

  page('/dashboard/keys/(\\d+)/edit', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    if (key.revokedAt !== null) return redirect(ctx.res, '/dashboard/keys?revoked=show');
    await editPage(ctx, key, keptDraft(ctx));
  }),

  action('/dashboard/keys/(\\d+)/edit', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    const draft = readDraft(ctx);
    const checked = await checkDraft(ctx, draft, key);
    if ('field' in checked) return editPage(ctx, key, { status: 400, draft, error: checked, notice: notSaved('The key was not changed.') });
    if (!(await ctx.deps.store.keys.update(key.id, checked))) {
      return editPage(ctx, key, { status: 409, draft, notice: { kind: 'error', text: 'This key was revoked meanwhile, so it cannot be changed.' } });
    }
    redirect(ctx.res, '/dashboard/keys?notice=updated');
  }),

  page('/dashboard/keys/(\\d+)/revoke', async (ctx) => {
    const key = await ownKey(ctx);
    if (!key) return notFoundPage(ctx, 'No such key.');
    if (key.revokedAt !== null) return redirect(ctx.res, '/dashboard/keys');
    sendHtml(ctx.res, 200, appPage(ctx, {
      section: 'keys',
      title: 'Revoke key',
      body: html`<section class="card narrow">
        <p>Revoke <strong class="wrap-value">${key.name}</strong> (<code>${key.prefix}…</code>)?</p>
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
