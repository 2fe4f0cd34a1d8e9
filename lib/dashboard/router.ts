// Routes of the dashboard: method, path pattern, whether a login is needed, handler.
import type { AccountContext, PageContext } from './context.js';

export interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** Needs a logged-in account (otherwise the visitor is sent to the login page). */
  signedIn: boolean;
  handle(ctx: PageContext): Promise<void>;
}

const compile = (path: string) => new RegExp(`^${path}$`);

export const page = (path: string, handle: (ctx: AccountContext) => Promise<void>): Route =>
  ({ method: 'GET', pattern: compile(path), signedIn: true, handle: handle as Route['handle'] });

export const action = (path: string, handle: (ctx: AccountContext) => Promise<void>): Route =>
  ({ method: 'POST', pattern: compile(path), signedIn: true, handle: handle as Route['handle'] });

export const publicPage = (path: string, handle: (ctx: PageContext) => Promise<void>): Route =>
  ({ method: 'GET', pattern: compile(path), signedIn: false, handle });

export const publicAction = (path: string, handle: (ctx: PageContext) => Promise<void>): Route =>
  ({ method: 'POST', pattern: compile(path), signedIn: false, handle });

/** Where to go after logging in: only a dashboard path of this site. */
export function safeNext(value: string | null | undefined): string {
  return value && /^\/dashboard(?:[/?][A-Za-z0-9/_\-?=&%.+]*)?$/.test(value) ? value : '/dashboard';
}
