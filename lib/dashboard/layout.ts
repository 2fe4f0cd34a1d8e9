// The page shells: the signed-in layout (sidebar navigation, account, log out) and the narrow one
// of the login and sign-up pages; both open with a skip link to their main element.
import { html, type Html, type Value } from './html.js';
import type { AccountContext, PageContext } from './context.js';

export type Section = 'overview' | 'keys' | 'credits' | 'routing' | 'requests' | 'models' | 'settings';

const NAV: { group: string; items: [Section, string, string][] }[] = [
  { group: 'Account', items: [['overview', 'Overview', '/dashboard'], ['keys', 'API Keys', '/dashboard/keys'], ['credits', 'Credits', '/dashboard/credits'], ['routing', 'Routing', '/dashboard/routing'], ['settings', 'Settings', '/dashboard/settings']] },
  { group: 'Analytics', items: [['requests', 'Requests', '/dashboard/requests']] },
  { group: 'Marketplace', items: [['models', 'Models', '/dashboard/models']] },
];

export interface Notice {
  kind: 'success' | 'info' | 'warning' | 'error';
  text: Value;
}

export const notice = (n: Notice | undefined): Html | false =>
  n !== undefined && html`<div class="notice notice-${n.kind}" role="${n.kind === 'error' ? 'alert' : 'status'}">${n.text}</div>`;

export const csrfField = (ctx: PageContext): Html => html`<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">`;

/** In a form that sets a password: the account's email, for password managers to file it under (no name: never sent). */
export const usernameField = (email: string): Html => html`<input type="text" autocomplete="username" value="${email}" hidden readonly>`;

function head(title: string): Html {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · LLM Gateway</title>
<link rel="stylesheet" href="/dashboard/assets/style.css">
<script src="/dashboard/assets/dashboard.js" defer></script>
</head>`;
}

/** The first tab stop of every page (shown when focused): past the navigation to the page's own content. */
const skipLink = html`<a class="skip-link" href="#main">Skip to content</a>`;

const brand = html`<span class="brand-mark" aria-hidden="true"></span><span>LLM Gateway</span>`;

export function appPage(ctx: AccountContext, opts: { section: Section | null; title: string; body: Value; notice?: Notice; actions?: Value; lead?: Value }): Html {
  return html`<html lang="en">
${head(opts.title)}
<body>
${skipLink}
<div class="shell">
  <aside class="sidebar"><div class="sidebar-inner">
    <a class="brand" href="/dashboard">${brand}</a>
    <nav aria-label="Dashboard">
      ${NAV.map((g) => html`<div class="nav-group"><div class="nav-heading">${g.group}</div>
        ${g.items.map(([id, label, href]) => html`<a href="${href}"${id === opts.section ? html` class="active" aria-current="page"` : ''}>${label}</a>`)}
      </div>`)}
    </nav>
    <div class="sidebar-foot">
      <div class="who" title="${ctx.account.email}">${ctx.account.email}</div>
      <form method="post" action="/dashboard/logout">${csrfField(ctx)}<button type="submit" class="link-button">Log out</button></form>
    </div>
  </div></aside>
  <main id="main" tabindex="-1">
    <header class="page-head">
      <div><h1>${opts.title}</h1>${opts.lead && html`<p class="lead">${opts.lead}</p>`}</div>
      ${opts.actions && html`<div class="page-actions">${opts.actions}</div>`}
    </header>
    ${notice(opts.notice)}
    ${opts.body}
  </main>
</div>
</body>
</html>`;
}

export function authPage(opts: { title: string; body: Value; notice?: Notice }): Html {
  return html`<html lang="en">
${head(opts.title)}
<body class="auth">
${skipLink}
<main class="auth-box" id="main" tabindex="-1">
  <div class="brand auth-brand">${brand}</div>
  <section class="card">
    <h1>${opts.title}</h1>
    ${notice(opts.notice)}
    ${opts.body}
  </section>
</main>
</body>
</html>`;
}
