// What the request path tells the metrics: one call when a request ended. With metrics off the
// recorder is a no-op, so the hot path pays one empty call and nothing else.
import type { RequestContext } from '../context.js';

export interface MetricsRecorder {
  /**
   * A request ended: its done hooks ran (usage, charge and history are known). Its upstream
   * attempts are read from ctx.attempts, so the attempt loop needs no call of its own.
   */
  requestEnded(ctx: RequestContext): void;
}

export const NO_METRICS: MetricsRecorder = { requestEnded() {} };
