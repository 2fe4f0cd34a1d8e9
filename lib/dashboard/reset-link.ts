// Password reset links: `gateway accounts reset-link` makes one, the dashboard's reset page
// (pages/reset.ts) takes it. The operator hands the link to the account owner: no e-mail needed.

/** The reset page, under the dashboard's prefix as every route is (router.ts). */
export const RESET_PATH = '/dashboard/reset';

/** A link works for an hour, once. */
export const RESET_TTL_MS = 3_600_000;

/** The link for `token`: absolute when a base address is known (--base-url, dashboard.public_url), else the path. */
export function resetLink(token: string, base?: string): string {
  return `${(base ?? '').replace(/\/+$/, '')}${RESET_PATH}?token=${encodeURIComponent(token)}`;
}
