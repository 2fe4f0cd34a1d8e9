// Error pages: in the signed-in layout when there is an account, else in the narrow one.
import type { PageContext } from '../context.js';
import { sendHtml } from '../http.js';
import { html } from '../html.js';
import { appPage, authPage } from '../layout.js';

export function errorPage(ctx: PageContext, status: number, title: string, message: string): void {
  const body = html`<section class="card narrow"><p>${message}</p><p><a href="/dashboard">Back to the dashboard</a></p></section>`;
  const account = ctx.visitor.account;
  sendHtml(ctx.res, status, account
    ? appPage({ ...ctx, account }, { section: null, title, body })
    : authPage({ title, body: html`<p>${message}</p><p><a href="/dashboard/login">Log in</a></p>` }));
}

export const notFoundPage = (ctx: PageContext, message = 'There is no such page.'): void => errorPage(ctx, 404, 'Not found', message);
