// Analytics → Requests: the account's request history, newest first, filtered by key, model,
// endpoint, status and date, searchable by request id (the x-request-id header of every response;
// any case, with or without `req_`, or its start), with totals of the filtered view, pages both
// ways and a CSV export; and one request's detail with every attempt.
import type { AttemptOutcome, Route as ApiRoute } from '../../context.js';
import type { HistoryQuery, HistoryRow, HistoryStatus } from '../../store/types.js';
import type { AccountContext } from '../context.js';
import { formatUsd } from '../../store/money.js';
import { count, dateTime, DAY_MS, isoDay, milliseconds, money, timeOfDay, usd } from '../format.js';
import { csv } from '../csv.js';
import { fieldMessage, invalidAttrs } from '../field-error.js';
import { sendDownload, sendHtml } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage } from '../layout.js';
import { page, type Route } from '../router.js';
import { requestIdPrefix } from '../request-id.js';
import { notFoundPage } from './errors.js';

const PAGE_SIZE = 50;
/** Rows a CSV export holds at most (the newest of the filtered view): a few MB, built in memory. */
export const CSV_MAX_ROWS = 10_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const STATUSES: [HistoryStatus, string][] = [['ok', 'OK'], ['error', 'Error'], ['client_gone', 'Client gone']];
const OUTCOME: Record<AttemptOutcome, [string, string]> = { ok: ['badge-success', 'OK'], failed: ['badge-error', 'Failed'], skipped: ['badge-muted', 'Skipped'] };
const ROUTE_LABEL: Record<ApiRoute, string> = {
  chat: 'POST /v1/chat/completions', messages: 'POST /v1/messages', count_tokens: 'POST /v1/messages/count_tokens', models: 'GET /v1/models',
};

function statusBadge(r: HistoryRow): Html {
  const cls = r.status === 'ok' ? 'badge-success' : r.status === 'error' ? 'badge-error' : 'badge-muted';
  const label = STATUSES.find(([s]) => s === r.status)![1];
  return html`<span class="badge ${cls}">${label}${r.httpStatus !== null && r.status !== 'client_gone' ? ` ${r.httpStatus}` : ''}</span>`;
}

const dayStart = (text: string | null): number | undefined => (text && DAY.test(text) ? Date.parse(`${text}T00:00:00Z`) : undefined);

async function keyNames(ctx: AccountContext): Promise<Map<number, string>> {
  return new Map((await ctx.deps.store.keys.list(ctx.account.id)).map((k) => [k.id, k.name]));
}

/** A paging cursor: `${time}_${requestId}` (a summary row's id has underscores too). */
function cursor(text: string | null): { time: number; requestId: string } | undefined {
  const m = /^(\d+)_([A-Za-z0-9_]{1,80})$/.exec(text ?? '');
  return m ? { time: Number(m[1]), requestId: m[2] } : undefined;
}

const cursorOf = (r: HistoryRow) => `${r.time}_${r.requestId}`;

/** The list's filters as the query string has them (the same for the page and its CSV). */
function readFilters(ctx: AccountContext) {
  const p = ctx.url.searchParams;
  const q = (p.get('q') ?? '').trim();
  const idPrefix = q ? requestIdPrefix(q) : null;
  const status = STATUSES.some(([s]) => s === p.get('status')) ? (p.get('status') as HistoryStatus) : undefined;
  const route = Object.hasOwn(ROUTE_LABEL, p.get('route') ?? '') ? (p.get('route') as ApiRoute) : undefined;
  const keyId = /^\d{1,15}$/.test(p.get('key') ?? '') ? Number(p.get('key')) : undefined;
  const fromText = p.get('from') ?? '', toText = p.get('to') ?? '';
  const from = dayStart(fromText), toDay = dayStart(toText);
  const query: HistoryQuery = {
    model: p.get('model') || undefined, status, route, keyId, from,
    to: toDay === undefined ? undefined : toDay + DAY_MS, // the "to" day is included
    idPrefix: idPrefix ?? undefined,
  };
  return {
    q, query, fromText: from === undefined ? '' : fromText, toText: toDay === undefined ? '' : toText,
    /** Typed, but no request id starts like that. */
    badSearch: Boolean(q) && idPrefix === null,
    filtered: Boolean(q || query.model || status || route || keyId !== undefined || fromText || toText),
  };
}

/** The filters alone, as a query string (for the CSV link and the pager). */
function filterParams(ctx: AccountContext): URLSearchParams {
  const out = new URLSearchParams(ctx.url.searchParams);
  out.delete('after');
  out.delete('before');
  return out;
}

async function requestsPage(ctx: AccountContext): Promise<void> {
  const p = ctx.url.searchParams;
  const f = readFilters(ctx);
  const { history, keys } = ctx.deps.store;
  const after = cursor(p.get('after'));
  const before = after ? undefined : cursor(p.get('before'));
  const query: HistoryQuery = { ...f.query, limit: PAGE_SIZE, after, before };

  let rows: HistoryRow[] = [];
  let totals = { rows: 0, requests: 0, inputTokens: 0, outputTokens: 0, costNano: 0 };
  if (!f.badSearch) [rows, totals] = await Promise.all([history.list(ctx.account.id, query), history.totals(ctx.account.id, f.query)]);
  // The page's place in the whole list: the rows newer than its first one.
  const newer = rows.length > 0 && (after || before) ? (await history.totals(ctx.account.id, { ...f.query, before: rows[0] })).rows : 0;
  const older = totals.rows - newer - rows.length;
  const allKeys = await keys.list(ctx.account.id);
  const names = new Map(allKeys.map((k) => [k.id, k.name]));
  const base = filterParams(ctx);
  const link = (name: 'after' | 'before', r: HistoryRow) => {
    const to = new URLSearchParams(base);
    to.set(name, cursorOf(r));
    return `/dashboard/requests?${to.toString()}`;
  };
  const selected = (on: boolean) => (on ? html` selected` : '');
  const q = f.query;
  const searchError = f.badSearch ? { field: 'q', text: 'Not a request id: ids are req_ and letters and digits, such as req_01JD4K.' } : undefined;

  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'requests',
    title: 'Requests',
    lead: html`Every API request of this account, newest first. Each response carries its id in the <code>x-request-id</code> header.`,
    body: html`
    <form method="get" action="/dashboard/requests" class="card filters" role="search">
      <label class="grow">Request id <input name="q" value="${f.q}" placeholder="req_… or its first characters" spellcheck="false" autocapitalize="off"${invalidAttrs(searchError, 'q')}>${fieldMessage(searchError, 'q')}</label>
      <label>Key <select name="key"><option value="">Any key</option>${allKeys.map((k) => html`<option value="${k.id}"${selected(k.id === q.keyId)}>${k.name}${k.revokedAt !== null ? ' (revoked)' : ''}</option>`)}</select></label>
      <label>Model <select name="model"><option value="">Any model</option>${ctx.config.models.map((m) => html`<option value="${m.id}"${selected(m.id === q.model)}>${m.id}</option>`)}</select></label>
      <label>Endpoint <select name="route"><option value="">Any endpoint</option>${Object.entries(ROUTE_LABEL).map(([r, label]) => html`<option value="${r}"${selected(r === q.route)}>${label}</option>`)}</select></label>
      <label>Status <select name="status"><option value="">Any status</option>${STATUSES.map(([s, label]) => html`<option value="${s}"${selected(s === q.status)}>${label}</option>`)}</select></label>
      <label>From <input type="date" name="from" value="${f.fromText}"></label>
      <label>To <input type="date" name="to" value="${f.toText}"></label>
      <div class="filter-actions"><button type="submit" class="button primary">Apply</button>${f.filtered && html`<a class="button" href="/dashboard/requests">Reset</a>`}</div>
    </form>
    <section class="stats totals" aria-label="${f.filtered ? 'Totals of these filters' : 'Totals'}" data-testid="totals">
      <div class="stat"><div class="stat-label">Requests</div><div class="stat-value" data-testid="total-requests">${count(totals.requests)}</div></div>
      <div class="stat"><div class="stat-label">Tokens in / out</div><div class="stat-value" data-testid="total-tokens">${count(totals.inputTokens)} / ${count(totals.outputTokens)}</div></div>
      <div class="stat"><div class="stat-label">Spend</div><div class="stat-value" data-testid="total-spend">${money(totals.costNano)}</div></div>
      <div class="stat"><div class="stat-label">Export</div><div class="stat-sub"><a href="/dashboard/requests.csv?${base.toString()}" download data-testid="csv">Download CSV</a>
        of ${f.filtered ? 'these' : 'all'} requests (the newest ${count(CSV_MAX_ROWS)} rows at most)</div></div>
    </section>
    <section class="card flush">
      ${rows.length === 0 ? html`<p class="muted pad" data-testid="no-match">${f.q
        ? html`No request whose id starts with <code>${q.idPrefix ?? f.q}</code>${f.filtered && ' matches these filters'} in this account.`
        : f.filtered ? 'No requests match these filters.' : 'No requests yet.'}</p>` : html`
      <div class="table-wrap"><table class="requests stacked">
        <thead><tr><th>Time (UTC)</th><th>Request id · key</th><th>Model · offer</th><th>Status</th><th class="num">Tokens in / out</th><th class="num">Cost</th><th class="num">Latency</th></tr></thead>
        <tbody>${rows.map((r) => html`<tr data-request-id="${r.requestId}">
          <td data-label="Time (UTC)" class="nowrap">${timeOfDay(r.time)}<div class="sub">${isoDay(r.time)}</div></td>
          <td data-label="Request · key" class="nowrap">${r.notRecorded ? html`<span class="mono">${r.requestId}</span>` : html`<a href="/dashboard/requests/${r.requestId}" class="mono">${r.requestId}</a>`}<div class="sub wrap-value">${names.get(r.keyId) ?? `key #${r.keyId}`}</div></td>
          <td data-label="Model · offer"><div class="wrap-value">${r.model ?? html`<span class="muted">—</span>`}</div>${r.listing && html`<div class="sub wrap-value">${r.listing}</div>`}</td>
          <td data-label="Status">${statusBadge(r)}${r.notRecorded && html`<div class="sub" data-testid="not-recorded">${r.error}</div>`}</td>
          <td data-label="Tokens in/out" class="num nowrap">${count(r.usage.input + r.usage.cacheRead + r.usage.cacheWrite)} / ${count(r.usage.output)}</td>
          <td data-label="Cost" class="num">${usd(r.costNano)}</td>
          <td data-label="Latency" class="num nowrap">${milliseconds(r.latencyMs)}</td>
        </tr>`)}</tbody>
      </table></div>`}
    </section>
    ${rows.length > 0 && html`<nav class="pager" aria-label="Pages">
      ${newer > 0 ? html`<a class="button" rel="prev" href="${link('before', rows[0])}">← Newer</a>` : html`<span class="button disabled" aria-hidden="true">← Newer</span>`}
      <span class="pager-count" data-testid="page-count">${count(newer + 1)}–${count(newer + rows.length)} of ${count(totals.rows)}</span>
      ${older > 0 ? html`<a class="button" rel="next" href="${link('after', rows.at(-1)!)}">Older →</a>` : html`<span class="button disabled" aria-hidden="true">Older →</span>`}
    </nav>`}`,
  }));
}

/** The filtered list as a CSV file: the newest CSV_MAX_ROWS rows, whatever the page. */
async function requestsCsv(ctx: AccountContext): Promise<void> {
  const f = readFilters(ctx);
  const rows = f.badSearch ? [] : await ctx.deps.store.history.list(ctx.account.id, { ...f.query, limit: CSV_MAX_ROWS });
  const names = await keyNames(ctx);
  const body = csv([
    ['time_utc', 'request_id', 'key', 'endpoint', 'model', 'offer', 'status', 'http_status', 'input_tokens', 'output_tokens',
      'cache_read_tokens', 'cache_write_tokens', 'cost_usd', 'latency_ms', 'error'],
    ...rows.map((r) => [
      new Date(r.time).toISOString(), r.requestId, names.get(r.keyId) ?? `#${r.keyId}`, ROUTE_LABEL[r.route], r.model, r.listing, r.status,
      r.httpStatus, r.usage.input, r.usage.output, r.usage.cacheRead, r.usage.cacheWrite, formatUsd(r.costNano).replace('$', ''), // exact, ungrouped
      Math.round(r.latencyMs), r.error,
    ]),
  ]);
  sendDownload(ctx.res, 'text/csv; charset=utf-8', `requests-${isoDay(Date.now())}.csv`, body);
}

async function requestDetail(ctx: AccountContext): Promise<void> {
  const row = await ctx.deps.store.history.get(ctx.params[0]);
  // Another account's request is "not found" too: ids are not secret, their details are.
  if (!row || row.accountId !== ctx.account.id) return notFoundPage(ctx, 'No such request in this account.');
  const names = await keyNames(ctx);
  const u = row.usage;
  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'requests',
    title: 'Request',
    lead: html`<span class="mono" data-testid="request-id">${row.requestId}</span>`,
    actions: html`<a class="button" href="/dashboard/requests">← All requests</a>`,
    body: html`
    <div class="detail-grid">
      <section class="card">
        <h2>Summary</h2>
        <dl class="pairs">
          <dt>Status</dt><dd>${statusBadge(row)}</dd>
          <dt>Time</dt><dd>${dateTime(row.time)}</dd>
          <dt>Endpoint</dt><dd><code>${ROUTE_LABEL[row.route]}</code>${row.stream ? ' (stream)' : ''}</dd>
          <dt>Model</dt><dd>${row.model ?? '—'}${row.requestedModel && html`<span class="muted"> · asked as <code>${row.requestedModel}</code></span>`}</dd>
          <dt>Served by</dt><dd>${row.listing ?? '—'}</dd>
          <dt>Key</dt><dd>${names.get(row.keyId) ?? `#${row.keyId}`}</dd>
          <dt>Latency</dt><dd>${milliseconds(row.latencyMs)}<span class="muted"> · first byte after ${milliseconds(row.ttfbMs)}</span></dd>
          ${row.error && html`<dt>Error</dt><dd class="error-text">${row.error}</dd>`}
        </dl>
      </section>
      <section class="card">
        <h2>Tokens and cost</h2>
        <dl class="pairs">
          <dt>Input</dt><dd class="num">${count(u.input)}</dd>
          <dt>Output</dt><dd class="num">${count(u.output)}</dd>
          <dt>Cache read</dt><dd class="num">${count(u.cacheRead)}</dd>
          <dt>Cache write</dt><dd class="num">${count(u.cacheWrite)}${u.cacheWrite1h > 0 ? html` <span class="sub">(1 hour: ${count(u.cacheWrite1h)})</span>` : ''}</dd>
          <dt>Hold</dt><dd class="num">${usd(row.holdNano)}</dd>
          <dt>Cost</dt><dd class="num"><strong data-testid="cost">${usd(row.costNano)}</strong></dd>
        </dl>
      </section>
    </div>
    <section class="card flush">
      <h2 class="pad">Attempts</h2>
      ${row.attempts.length === 0 ? html`<p class="muted pad">No upstream was tried (the gateway answered itself or refused the request).</p>` : html`
      <div class="table-wrap"><table>
        <thead><tr><th>#</th><th>Offer</th><th>Outcome</th><th>Upstream status</th><th>Reason</th><th class="num">Duration</th></tr></thead>
        <tbody>${row.attempts.map((a, i) => html`<tr>
          <td>${i + 1}</td><td>${a.listing}</td>
          <td><span class="badge ${OUTCOME[a.outcome][0]}">${OUTCOME[a.outcome][1]}</span></td>
          <td>${a.status ?? '—'}</td><td>${a.reason ?? '—'}</td><td class="num">${milliseconds(a.durationMs)}</td>
        </tr>`)}</tbody>
      </table></div>`}
    </section>`,
  }));
}

export const requestRoutes: Route[] = [
  page('/dashboard/requests', requestsPage),
  page('/dashboard/requests\\.csv', requestsCsv),
  page('/dashboard/requests/(req_[0-9A-Z]+)', requestDetail),
];
