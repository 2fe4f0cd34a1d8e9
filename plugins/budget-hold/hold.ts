// The request's credit hold, shared by budget-hold (which opens it) and metering (which settles it).
import type { RequestContext } from '../../lib/context.js';
import { andThen, isPromise, type MaybePromise } from '../../lib/maybe-promise.js';
import type { Ledger } from '../../lib/store/types.js';

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

/** How a hold ended: the amount charged, and the settle's failure when it was released instead. */
export interface HoldEnd {
  charged: number;
  settleError?: unknown;
}

/**
 * End the hold: settle it at `charge`, or release it when `charge` is null. Should that fail, the
 * hold is released instead (the charge is lost, but the credit must not stay held) and the failure
 * is returned. Should the release fail too, that error is thrown and the hold stays unmarked, so
 * budget-hold's onDone tries again. Synchronous when the ledger is.
 */
export function endHold(ledger: Ledger, hold: RequestHold, charge: number | null): MaybePromise<HoldEnd> {
  const ended = (charged: number, settleError?: unknown): HoldEnd => {
    hold.ended = true;
    return { charged, settleError };
  };
  const releaseInstead = (settleError: unknown) => andThen(ledger.release(hold.id), () => ended(0, settleError));
  const charged = (r: number | null | boolean) => ended(typeof r === 'number' ? r : 0);
  let first: MaybePromise<number | null | boolean>;
  try {
    first = charge === null ? ledger.release(hold.id) : ledger.settle(hold.id, charge);
  } catch (err) {
    return releaseInstead(err);
  }
  return isPromise(first) ? first.then(charged, releaseInstead) : charged(first);
}
