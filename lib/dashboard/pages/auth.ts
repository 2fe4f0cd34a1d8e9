// Sign up, log in, log out.
import { PASSWORD_MAX_LENGTH as MAX_PASSWORD, PASSWORD_MIN_LENGTH as MIN_PASSWORD, passwordProblem } from '../../store/password.js';
import { StoreError } from '../../store/types.js';
import type { PageContext } from '../context.js';
import { clientAddress, redirect, sendHtml } from '../http.js';
import { html } from '../html.js';
import { authPage, csrfField, type Notice } from '../layout.js';
import { formPage, keptFields, stashKept } from '../kept-form.js';
import { action, publicAction, publicPage, safeNext, type Route } from '../router.js';
import { endSession, startSession } from '../session.js';

const HOUR_MS = 3_600_000;

const SESSION_ENDED: Notice = {
  kind: 'warning', text: 'Your session has ended, so that was not saved. Log in again to get back to the page, with what you entered kept.',
};

const NOTICES: Record<string, Notice> = {
  'logged-out': { kind: 'info', text: 'You have logged out.' },
  'signed-out': { kind: 'info', text: 'Please log in to continue.' },
  'password-reset': { kind: 'success', text: 'Your new password is set and every session of the account has ended. Log in with the new password.' },
};

function loginForm(ctx: PageContext, status: number, opts: { email?: string; notice?: Notice; next?: string; kept?: string } = {}): void {
  const next = opts.next ?? safeNext(ctx.url.searchParams.get('next') ?? ctx.form.get('next'));
  const kept = opts.kept ?? keptFields(new URLSearchParams(ctx.form.get('kept') ?? ''));
  const open = ctx.config.dashboard.signup === 'open';
  sendHtml(ctx.res, status, authPage({
    title: 'Log in',
    notice: opts.notice ?? NOTICES[ctx.url.searchParams.get('notice') ?? ''],
    body: html`<form method="post" action="/dashboard/login" class="stack">
      ${csrfField(ctx)}
      <input type="hidden" name="next" value="${next}">
      ${kept && html`<input type="hidden" name="kept" value="${kept}">`}
      <label>Email <input type="email" name="email" value="${opts.email ?? ''}" autocomplete="username" required autofocus></label>
      <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
      <button type="submit" class="button primary wide">Log in</button>
    </form>
    <p class="muted center">Forgot your password? Ask your operator for a reset link.</p>
    <p class="muted center">${open ? html`New here? <a href="/dashboard/signup">Create an account</a>` : 'Accounts are created by the operator of this gateway.'}</p>`,
  }));
}

function signupForm(ctx: PageContext, status: number, opts: { email?: string; notice?: Notice } = {}): void {
  if (ctx.config.dashboard.signup !== 'open') {
    sendHtml(ctx.res, 403, authPage({
      title: 'Sign-up is closed',
      body: html`<p>New accounts on this gateway are created by its operator. Ask them for an account, then <a href="/dashboard/login">log in</a>.</p>`,
    }));
    return;
  }
  sendHtml(ctx.res, status, authPage({
    title: 'Create your account',
    notice: opts.notice,
    body: html`<form method="post" action="/dashboard/signup" class="stack">
      ${csrfField(ctx)}
      <label>Email <input type="email" name="email" value="${opts.email ?? ''}" autocomplete="username" required autofocus></label>
      <label>Password <input type="password" name="password" autocomplete="new-password" minlength="${MIN_PASSWORD}" maxlength="${MAX_PASSWORD}" required>
        <span class="hint">At least ${MIN_PASSWORD} characters.</span></label>
      <button type="submit" class="button primary wide">Create account</button>
    </form>
    <p class="muted center">Already have an account? <a href="/dashboard/login">Log in</a></p>`,
  }));
}

/** The login limiter's name for an email at an address (both cut to a valid length: bounded memory). */
export const loginKey = (email: string, address: string) => `${email.toLowerCase().slice(0, 320)}\n${address.slice(0, 100)}`;

/** Refuse while the names must wait; true when refused. */
export function mustWait(ctx: PageContext, names: { address: string; login?: string }, again: (n: Notice) => void): boolean {
  const wait = Math.max(ctx.limiters.address.retryAfter(names.address), names.login ? ctx.limiters.login.retryAfter(names.login) : 0);
  if (wait === 0) return false;
  const seconds = Math.ceil(wait / 1000);
  const minutes = Math.ceil(seconds / 60);
  ctx.res.setHeader('retry-after', seconds);
  again({ kind: 'error', text: `Too many attempts. Try again in ${seconds < 120 ? `${seconds} second${seconds === 1 ? '' : 's'}` : `${minutes} minutes`}.` });
  return true;
}

/** A form posted after its session ended: the login page, which keeps the form's fields (see kept-form.ts). */
export function sessionEnded(ctx: PageContext, form: URLSearchParams): void {
  loginForm(ctx, 401, { notice: SESSION_ENDED, next: formPage(ctx), kept: keptFields(form) });
}

export const authRoutes: Route[] = [
  publicPage('/dashboard/login', async (ctx) => {
    if (ctx.visitor.account) return redirect(ctx.res, '/dashboard');
    loginForm(ctx, 200);
  }),

  publicAction('/dashboard/login', async (ctx) => {
    const email = (ctx.form.get('email') ?? '').trim();
    const password = ctx.form.get('password') ?? '';
    const address = clientAddress(ctx.req, ctx.config.dashboard.trust_proxy);
    const login = loginKey(email, address);
    if (mustWait(ctx, { address, login }, (n) => loginForm(ctx, 429, { email, notice: n }))) return;
    // Counted as failures before the password is checked (and taken back if it is right), so
    // guesses sent in parallel count too.
    ctx.limiters.login.fail(login);
    ctx.limiters.address.fail(address);
    const account = email && password.length <= MAX_PASSWORD ? await ctx.deps.store.accounts.checkPassword(email, password) : null;
    if (!account) return loginForm(ctx, 401, { email, notice: { kind: 'error', text: 'Wrong email or password.' } });
    ctx.limiters.login.reset(login);
    ctx.limiters.address.forgive(address);
    await startSession(ctx.res, ctx.deps.store, account.id, ctx.config.dashboard.session_ttl_hours * HOUR_MS, ctx.secure);
    const next = safeNext(ctx.form.get('next'));
    const kept = keptFields(new URLSearchParams(ctx.form.get('kept') ?? ''));
    if (kept) stashKept(ctx, next, kept);
    redirect(ctx.res, next);
  }),

  publicPage('/dashboard/signup', async (ctx) => {
    if (ctx.visitor.account) return redirect(ctx.res, '/dashboard');
    signupForm(ctx, 200);
  }),

  publicAction('/dashboard/signup', async (ctx) => {
    if (ctx.config.dashboard.signup !== 'open') return signupForm(ctx, 403);
    const email = (ctx.form.get('email') ?? '').trim();
    const password = ctx.form.get('password') ?? '';
    const address = clientAddress(ctx.req, ctx.config.dashboard.trust_proxy);
    const again = (text: string, status = 400) => signupForm(ctx, status, { email, notice: { kind: 'error', text } });
    if (mustWait(ctx, { address }, (n) => signupForm(ctx, 429, { email, notice: n }))) return;
    if (passwordProblem(password)) {
      return again(`Choose a password of at least ${MIN_PASSWORD} characters.`);
    }
    // Each sign-up counts against the address: account creation (and its password hashing) is not free.
    ctx.limiters.address.fail(address);
    let accountId: number;
    try {
      accountId = (await ctx.deps.store.accounts.create({ email, password })).id;
    } catch (err) {
      if (err instanceof StoreError && err.code === 'conflict') return again('An account with this email exists already. Log in instead.', 409);
      if (err instanceof StoreError && err.code === 'invalid') return again('Enter a valid email address.');
      throw err;
    }
    await startSession(ctx.res, ctx.deps.store, accountId, ctx.config.dashboard.session_ttl_hours * HOUR_MS, ctx.secure);
    redirect(ctx.res, '/dashboard?notice=welcome');
  }),

  action('/dashboard/logout', async (ctx) => {
    await endSession(ctx.res, ctx.deps.store, ctx.visitor, ctx.secure);
    redirect(ctx.res, '/dashboard/login?notice=logged-out');
  }),
];
