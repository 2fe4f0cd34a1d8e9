// The request's credit hold, shared by budget-hold (which opens it) and metering (which settles it).
import type { RequestContext } from '../../lib/context.js';

export interface RequestHold {
  id: string;
  amount: number;
  /** Set once the ledger has ended the hold (metering's settle, or a release); until then budget-hold's onDone releases it. */
  ended: boolean;
}

const KEY = 'budget-hold';

export function holdOf(ctx: RequestContext): RequestHold | undefined {
  return ctx.state[KEY] as RequestHold | undefined;
}

export function setHold(ctx: RequestContext, hold: RequestHold): void {
  ctx.state[KEY] = hold;
}
