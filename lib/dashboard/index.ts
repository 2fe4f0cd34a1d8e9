// The dashboard: the account owner's web UI under /dashboard, and the Stripe webhook at
// /webhooks/stripe, served by the gateway's own HTTP server (one PageHandler). Server-rendered
// HTML with our own stylesheet; every flow works without JavaScript.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PageHandler } from '../server.js';
import { GatewayError, isUnavailable, toGatewayError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import type { AccountContext, DashboardDeps, Limiters, PageContext } from './context.js';
import { readForm, redirect, sendText, viaTls } from './http.js';
import { AttemptLimiter } from './rate-limit.js';
import type { Route } from './router.js';
import { crossSite, identify, validCsrf } from './session.js';
import { stripeWebhook } from './stripe.js';
import { authRoutes, sessionEnded } from './pages/auth.js';
import { creditRoutes } from './pages/credits.js';
import { errorPage, notFoundPage } from './pages/errors.js';
import { keyRoutes } from './pages/keys.js';
import { modelRoutes } from './pages/models.js';
import { overviewRoutes } from './pages/overview.js';
import { requestRoutes } from './pages/requests.js';
import { resetRoutes } from './pages/reset.js';
import { routingRoutes } from './pages/routing.js';
import { settingsRoutes } from './pages/settings.js';

export type { DashboardDeps } from './context.js';

/**
 * Login throttles: 5 failures for one email from one address, or 20 from one address for any
 * emails, then each attempt waits 1 s, 2 s, 4 s, … up to 15 minutes; forgotten an hour after the
 * last failure. Nobody is locked out: an attacker elsewhere does not slow the owner down.
 * With N nodes: free failures / N and waits × N on each node.
 */
const LOGIN_BACKOFF = { free: 5, baseMs: 1000, maxMs: 15 * 60_000, forgetMs: 60 * 60_000 };
const ADDRESS_BACKOFF = { ...LOGIN_BACKOFF, free: 20 };

const ASSETS: Record<string, { file: string; type: string }> = {
  '/dashboard/assets/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/dashboard/assets/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
};
const assetCache = new Map<string, Buffer>();
const asset = (file: string) => {
  let b = assetCache.get(file);
  if (!b) assetCache.set(file, (b = readFileSync(join(packageRoot(), 'lib', 'dashboard', 'assets', file))));
  return b;
};

const routes: Route[] = [...authRoutes, ...overviewRoutes, ...keyRoutes, ...creditRoutes, ...routingRoutes, ...requestRoutes, ...modelRoutes,
  ...settingsRoutes, ...resetRoutes];

export function dashboardPages(deps: DashboardDeps): PageHandler {
  // Several nodes on one database share each allowance (lib/dashboard/rate-limit.ts).
  const liveNodes = () => deps.store.liveNodes?.() ?? 1;
  const limiters: Limiters = {
    login: new AttemptLimiter(LOGIN_BACKOFF, Date.now, liveNodes),
    address: new AttemptLimiter(ADDRESS_BACKOFF, Date.now, liveNodes),
  };

  async function serve(ctx: PageContext, path: string): Promise<void> {
    const method = ctx.req.method === 'HEAD' ? 'GET' : ctx.req.method;
    let matched: { route: Route; params: string[] } | undefined;
    const allowed: string[] = [];
    for (const route of routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      allowed.push(route.method);
      if (route.method === method) {
        matched = { route, params: m.slice(1) };
        break;
      }
    }
    if (!matched) {
      ctx.req.resume();
      if (allowed.length === 0) return notFoundPage(ctx);
      ctx.res.setHeader('allow', allowed.join(', '));
      return errorPage(ctx, 405, 'Not allowed', `This page does not accept ${method} requests.`);
    }
    const { route, params } = matched;
    ctx.params = params;
    if (method === 'POST') {
      // Refused before reading anything: no cross-site post may change state, logged in or not.
      if (crossSite(ctx.req, ctx.config.dashboard)) {
        ctx.req.resume();
        return errorPage(ctx, 403, 'Request refused', 'This form was sent from another site, so it was refused.');
      }
      const form = await readForm(ctx.req);
      if (!form) return errorPage(ctx, 415, 'Not a form', 'Only form posts are accepted here.');
      // The session ended (its token is no longer this visitor's): log in again, what was typed kept.
      if (route.signedIn && !ctx.visitor.account) return sessionEnded(ctx, form);
      if (!validCsrf(ctx.visitor, form.get('csrf'))) {
        return errorPage(ctx, 403, 'Form expired', 'This form has expired or was not sent from this site. Go back, reload the page and try again.');
      }
      ctx.form = form;
    }
    if (route.signedIn && !ctx.visitor.account) {
      ctx.req.resume();
      const back = method === 'GET' ? ctx.url.pathname + ctx.url.search : '/dashboard';
      return redirect(ctx.res, `/dashboard/login?next=${encodeURIComponent(back)}`);
    }
    await route.handle(route.signedIn ? ({ ...ctx, account: ctx.visitor.account! } as AccountContext) : ctx);
  }

  const handler: PageHandler = async (req, res, path) => {
    const config = deps.config();
    if (path === '/webhooks/stripe') {
      if (!config.stripe) return false;
      await stripeWebhook(req, res, config.stripe, deps.store, deps.log);
      return true;
    }
    if (!config.dashboard.enabled || (path !== '/dashboard' && !path.startsWith('/dashboard/'))) return false;
    const file = ASSETS[path];
    if (file && (req.method === 'GET' || req.method === 'HEAD')) {
      sendText(res, 200, file.type, asset(file.file), 'public, max-age=3600');
      return true;
    }
    const secure = config.dashboard.secure_cookies || viaTls(req);
    let ctx: PageContext | undefined;
    try {
      await deps.store.sync(); // credit granted or keys changed from the command line show at once
      const visitor = await identify(req, res, deps.store, secure);
      ctx = {
        req, res, url: new URL(req.url ?? '/', 'http://dashboard.invalid'), params: [], deps, config, visitor, secure,
        form: new URLSearchParams(), limiters,
      };
      await serve(ctx, path);
    } catch (err) {
      if (err instanceof GatewayError && err.status === 413 && ctx && !res.headersSent) {
        res.setHeader('connection', 'close');
        errorPage(ctx, 413, 'Too large', 'That form was too large.');
      } else if (!res.headersSent && isUnavailable(err)) {
        // The database is away (the store logs that): a page to retry with Retry-After, as the API answers.
        res.setHeader('retry-after', String(toGatewayError(err).retryAfter));
        if (ctx) errorPage(ctx, 503, 'Unavailable', 'The dashboard cannot reach its database at the moment. Please try again shortly.');
        else sendText(res, 503, 'text/plain; charset=utf-8', 'The dashboard cannot reach its database at the moment. Please try again shortly.');
      } else {
        deps.log('error', 'dashboard page failed', { path, err });
        if (ctx && !res.headersSent) errorPage(ctx, 500, 'Something went wrong', 'The page could not be shown. Please try again.');
        else if (!res.headersSent) sendText(res, 500, 'text/plain; charset=utf-8', 'internal error');
        else res.destroy();
      }
    }
    return true;
  };
  handler.allMethods = true;
  return handler;
}
