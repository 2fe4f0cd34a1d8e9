// Account settings: change the dashboard password (the current one checked, throttled as logins
// are; the other sessions end, this one stays), and the account's sessions, with "sign out other
// sessions". A forgotten password is reset with an operator's link instead (pages/reset.ts).
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordProblem } from '../../store/password.js';
import type { AccountContext } from '../context.js';
import { fieldMessage, invalidAttrs, notSaved, type FieldError } from '../field-error.js';
import { when } from '../format.js';
import { clientAddress, redirect, sendHtml } from '../http.js';
import { html } from '../html.js';
import { appPage, csrfField, usernameField, type Notice } from '../layout.js';
import { action, page, type Route } from '../router.js';
import { loginKey, mustWait } from './auth.js';

const SETTINGS = '/dashboard/settings';

/** The notice after a change (its count of ended sessions from the address: nothing secret). */
function savedNotice(ctx: AccountContext): Notice | undefined {
  const q = ctx.url.searchParams;
  const n = Number(q.get('ended'));
  const ended = Number.isSafeInteger(n) && n > 0 ? `${n} other session${n === 1 ? ' was' : 's were'} signed out` : 'no other session was open';
  if (q.get('notice') === 'password-changed') return { kind: 'success', text: `Your password was changed and ${ended}. This session stays signed in.` };
  if (q.get('notice') === 'others-ended') return { kind: 'success', text: `Done: ${ended}. This session stays signed in.` };
  return undefined;
}

async function settingsPage(ctx: AccountContext, opts: { status?: number; notice?: Notice; error?: FieldError } = {}): Promise<void> {
  const sessions = await ctx.deps.store.sessions.listFor(ctx.account.id, ctx.visitor.sessionToken ?? undefined);
  const others = sessions.filter((s) => !s.current).length;
  const bad = (field: string) => invalidAttrs(opts.error, field);
  const why = (field: string) => fieldMessage(opts.error, field);
  sendHtml(ctx.res, opts.status ?? 200, appPage(ctx, {
    section: 'settings',
    title: 'Settings',
    lead: html`Signed in as <span class="mono">${ctx.account.email}</span>.`,
    notice: opts.notice ?? savedNotice(ctx),
    body: html`
    <section class="card narrow" aria-labelledby="password-heading">
      <h2 id="password-heading">Change password</h2>
      <form method="post" action="${SETTINGS}/password" class="stack" data-testid="password-form">
        ${usernameField(ctx.account.email)}
        ${csrfField(ctx)}
        <label>Current password <input type="password" name="current_password" autocomplete="current-password" required${bad('current_password')}>${why('current_password')}</label>
        <label>New password <input type="password" name="new_password" autocomplete="new-password" minlength="${PASSWORD_MIN_LENGTH}" maxlength="${PASSWORD_MAX_LENGTH}" required aria-describedby="new-password-hint"${bad('new_password')}>
          <span class="hint" id="new-password-hint">At least ${PASSWORD_MIN_LENGTH} characters. Your other sessions are signed out; this one stays.</span>${why('new_password')}</label>
        <div class="row"><button type="submit" class="button primary">Change password</button></div>
      </form>
    </section>
    <section class="card" aria-labelledby="sessions-heading">
      <div class="card-head"><h2 id="sessions-heading">Sessions</h2>
        <span class="muted small" data-testid="session-count">${sessions.length} active session${sessions.length === 1 ? '' : 's'}</span></div>
      <p class="muted small">Each browser you log in from holds a session until it logs out or the session expires.</p>
      <div class="table-wrap"><table class="sessions stacked">
        <thead><tr><th>Signed in</th><th>Expires</th><th>Browser</th></tr></thead>
        <tbody>${sessions.map((s) => html`<tr data-testid="session"${s.current ? html` data-current` : ''}>
          <td data-label="Signed in">${when(s.createdAt)}</td>
          <td data-label="Expires">${when(s.expiresAt)}</td>
          <td data-label="Browser">${s.current ? html`<span class="badge badge-success">This session</span>` : html`<span class="muted">Another browser</span>`}</td>
        </tr>`)}</tbody>
      </table></div>
      ${others > 0
        ? html`<form method="post" action="${SETTINGS}/sessions/end-others" class="row sessions-actions">${csrfField(ctx)}
            <button type="submit" class="button danger-outline">Sign out other sessions</button>
            <span class="muted small">Ends the ${others} other session${others === 1 ? '' : 's'}; this one stays.</span></form>`
        : html`<p class="muted small sessions-actions">No other session is open.</p>`}
    </section>`,
  }));
}

async function changePassword(ctx: AccountContext): Promise<void> {
  const current = ctx.form.get('current_password') ?? '';
  const next = ctx.form.get('new_password') ?? '';
  const again = (status: number, error: FieldError) => settingsPage(ctx, { status, error, notice: notSaved('The password was not changed.') });
  const address = clientAddress(ctx.req, ctx.config.dashboard.trust_proxy);
  const login = loginKey(ctx.account.email, address);
  // It checks a password: throttled with the logins of this email from this address.
  if (mustWait(ctx, { address, login }, (n) => settingsPage(ctx, { status: 429, notice: n }))) return;
  const problem = passwordProblem(next);
  if (problem) return again(400, { field: 'new_password', text: `Choose a new password of at least ${PASSWORD_MIN_LENGTH} and at most ${PASSWORD_MAX_LENGTH} characters.` });
  ctx.limiters.login.fail(login);
  ctx.limiters.address.fail(address);
  const ok = current.length <= PASSWORD_MAX_LENGTH && (await ctx.deps.store.accounts.checkPassword(ctx.account.email, current));
  if (!ok) return again(400, { field: 'current_password', text: 'That is not your current password.' });
  ctx.limiters.login.reset(login);
  ctx.limiters.address.forgive(address);
  const { sessionsEnded } = await ctx.deps.store.accounts.setPassword(ctx.account.id, next, ctx.visitor.sessionToken ?? undefined);
  redirect(ctx.res, `${SETTINGS}?notice=password-changed&ended=${sessionsEnded}`);
}

export const settingsRoutes: Route[] = [
  page(SETTINGS, (ctx) => settingsPage(ctx)),
  action(`${SETTINGS}/password`, changePassword),
  action(`${SETTINGS}/sessions/end-others`, async (ctx) => {
    const ended = ctx.visitor.sessionToken ? await ctx.deps.store.sessions.endOthers(ctx.account.id, ctx.visitor.sessionToken) : 0;
    redirect(ctx.res, `${SETTINGS}?notice=others-ended&ended=${ended}`);
  }),
];
