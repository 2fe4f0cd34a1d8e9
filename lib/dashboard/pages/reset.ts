// The page of a password reset link (`gateway accounts reset-link`, reset-link.ts): a new password
// typed twice sets the account's password, ends all its sessions and uses the link up; then the
// login page. A link that is unknown, used or expired gets a page saying so and what to do.
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordProblem } from '../../store/password.js';
import { StoreError } from '../../store/types.js';
import type { PageContext } from '../context.js';
import { fieldMessage, invalidAttrs, notSaved, type FieldError } from '../field-error.js';
import { redirect, sendHtml } from '../http.js';
import { html } from '../html.js';
import { authPage, csrfField, usernameField, type Notice } from '../layout.js';
import { RESET_PATH } from '../reset-link.js';
import { publicAction, publicPage, type Route } from '../router.js';
import { endSession, TOKEN_SHAPE } from '../session.js';

function linkNotWorking(ctx: PageContext): void {
  sendHtml(ctx.res, 404, authPage({
    title: 'This reset link does not work',
    body: html`<p>It has been used already, it has expired (a link works for one hour), or it was not copied whole.</p>
      <p>Ask your operator for a new reset link, or <a href="/dashboard/login">log in</a> if you know your password.</p>`,
  }));
}

function resetForm(ctx: PageContext, token: string, email: string, opts: { status?: number; error?: FieldError; notice?: Notice } = {}): void {
  const bad = (field: string) => invalidAttrs(opts.error, field);
  const why = (field: string) => fieldMessage(opts.error, field);
  sendHtml(ctx.res, opts.status ?? 200, authPage({
    title: 'Choose a new password',
    notice: opts.notice,
    body: html`<p class="muted">For <span class="mono">${email}</span>. Every session of this account ends, and you log in with the new password.</p>
    <form method="post" action="${RESET_PATH}" class="stack">
      ${usernameField(email)}
      ${csrfField(ctx)}
      <input type="hidden" name="token" value="${token}">
      <label>New password <input type="password" name="new_password" autocomplete="new-password" minlength="${PASSWORD_MIN_LENGTH}" maxlength="${PASSWORD_MAX_LENGTH}" required aria-describedby="new-password-hint"${bad('new_password')}${opts.error ? '' : html` autofocus`}>
        <span class="hint" id="new-password-hint">At least ${PASSWORD_MIN_LENGTH} characters.</span>${why('new_password')}</label>
      <label>New password again <input type="password" name="confirm_password" autocomplete="new-password" maxlength="${PASSWORD_MAX_LENGTH}" required${bad('confirm_password')}>${why('confirm_password')}</label>
      <button type="submit" class="button primary wide">Set password</button>
    </form>`,
  }));
}

/** The link's token and its account's email, or null when the link does not work (the page says so). */
async function liveLink(ctx: PageContext, token: string): Promise<{ accountId: number; email: string } | null> {
  const found = TOKEN_SHAPE.test(token) ? await ctx.deps.store.passwordResets.find(token) : null;
  const account = found && (await ctx.deps.store.accounts.byId(found.accountId));
  return account ? { accountId: account.id, email: account.email } : null;
}

export const resetRoutes: Route[] = [
  publicPage(RESET_PATH, async (ctx) => {
    const token = ctx.url.searchParams.get('token') ?? '';
    const link = await liveLink(ctx, token);
    if (!link) return linkNotWorking(ctx);
    resetForm(ctx, token, link.email);
  }),

  publicAction(RESET_PATH, async (ctx) => {
    const token = ctx.form.get('token') ?? '';
    const password = ctx.form.get('new_password') ?? '';
    const link = await liveLink(ctx, token);
    if (!link) return linkNotWorking(ctx);
    const again = (error: FieldError) => resetForm(ctx, token, link.email, { status: 400, error, notice: notSaved('The password was not set.') });
    if (passwordProblem(password)) {
      return again({ field: 'new_password', text: `Choose a password of at least ${PASSWORD_MIN_LENGTH} and at most ${PASSWORD_MAX_LENGTH} characters.` });
    }
    if (ctx.form.get('confirm_password') !== password) return again({ field: 'confirm_password', text: 'The two passwords differ. Type the new password again.' });
    // Used up before the password is set: of two posts of one link, only one sets it.
    const accountId = await ctx.deps.store.passwordResets.consume(token);
    if (accountId === null) return linkNotWorking(ctx);
    try {
      await ctx.deps.store.accounts.setPassword(accountId, password); // ends every session of the account
    } catch (err) {
      if (err instanceof StoreError && err.code === 'not_found') return linkNotWorking(ctx);
      throw err;
    }
    if (ctx.visitor.sessionToken) await endSession(ctx.res, ctx.deps.store, ctx.visitor, ctx.secure);
    redirect(ctx.res, '/dashboard/login?notice=password-reset');
  }),
];
