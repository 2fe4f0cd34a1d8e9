// What every dashboard page handler receives.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayConfig } from '../config-types.js';
import type { Offer } from '../context.js';
import type { Logger } from '../log.js';
import type { Account, Store } from '../store/types.js';
import type { AttemptLimiter } from './rate-limit.js';
import type { Visitor } from './session.js';

export interface DashboardDeps {
  store: Store;
  /** The current config (it changes on reload). */
  config(): GatewayConfig;
  /** The current config's offers by model id. */
  offers(): Map<string, Offer[]>;
  log: Logger;
}

export interface Limiters {
  /** Failed logins per email and client address (see loginKey): another address is not slowed. */
  login: AttemptLimiter;
  /** Failed logins and sign-ups per client address, whatever the email. */
  address: AttemptLimiter;
}

export interface PageContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** The route pattern's captures. */
  params: string[];
  deps: DashboardDeps;
  /** The config as it was when the request arrived. */
  config: GatewayConfig;
  visitor: Visitor;
  /** Cookies get the Secure flag (served over TLS). */
  secure: boolean;
  /** A post's form fields (CSRF already checked); empty for GET. */
  form: URLSearchParams;
  limiters: Limiters;
}

/** The context of a page that needs a login. */
export interface AccountContext extends PageContext {
  account: Account;
}
