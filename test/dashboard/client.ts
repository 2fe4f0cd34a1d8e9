// A cookie-keeping HTTP client for the dashboard's pages and forms, as a browser without JavaScript
// would use them (tests that need no Chromium, and that must also run where it is missing).
export interface PageReply {
  status: number;
  text: string;
  location: string | null;
  setCookies: string[];
  headers: Headers;
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page fetched. */
  csrf = '';

  constructor(readonly base: string) {}

  private remember(r: Response): string[] {
    const set = r.headers.getSetCookie();
    for (const c of set) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq), value = pair.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return set;
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<PageReply> {
    const r = await fetch(this.base + path, { redirect: 'manual', headers: { cookie: this.cookieHeader(), ...headers } });
    const setCookies = this.remember(r);
    const text = await r.text();
    const token = /name="csrf" value="([^"]+)"/.exec(text);
    if (token) this.csrf = token[1];
    return { status: r.status, text, location: r.headers.get('location'), setCookies, headers: r.headers };
  }

  /** Post a form; the CSRF token of the last page and a same-origin Origin header unless told otherwise. */
  async post(path: string, fields: Record<string, string | string[]>, opts: { csrf?: string | null; origin?: string | null; headers?: Record<string, string> } = {}): Promise<PageReply> {
    const body = new URLSearchParams();
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    if (csrf !== null) body.append('csrf', csrf);
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    const origin = opts.origin === undefined ? this.base : opts.origin;
    const r = await fetch(this.base + path, {
      method: 'POST', redirect: 'manual', body,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...(origin !== null && { origin }), ...opts.headers },
    });
    const setCookies = this.remember(r);
    const text = await r.text();
    const token = /name="csrf" value="([^"]+)"/.exec(text);
    if (token) this.csrf = token[1];
    return { status: r.status, text, location: r.headers.get('location'), setCookies, headers: r.headers };
  }

  /** Sign up through the forms; the client is then logged in. */
  static async signUp(base: string, email: string, password = 'correct horse battery'): Promise<DashboardClient> {
    const c = new DashboardClient(base);
    await c.get('/dashboard/signup');
    const r = await c.post('/dashboard/signup', { email, password });
    if (r.status !== 303) throw new Error(`sign-up failed with ${r.status}: ${r.text.slice(0, 500)}`);
    await c.get('/dashboard');
    return c;
  }

  /** Create a key through the form (post, then the page it redirects to); returns the full key shown once. */
  async createKey(name: string, fields: Record<string, string | string[]> = {}): Promise<{ secret: string; page: PageReply }> {
    await this.get('/dashboard/keys');
    const posted = await this.post('/dashboard/keys', { name, ...fields });
    if (posted.status !== 303 || !posted.location) throw new Error(`key creation failed with ${posted.status}`);
    const page = await this.get(posted.location);
    const m = /value="(sk-service-[A-Za-z0-9]+)"[^>]*data-testid="new-key"/.exec(page.text);
    if (page.status !== 200 || !m) throw new Error(`the new key's page answered ${page.status} without the key`);
    return { secret: m[1], page };
  }
}
