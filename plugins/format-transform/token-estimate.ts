// A local input-token count for a messages-format count_tokens body, for offers whose upstream
// cannot count (chat-format providers have no count route). It errs on the high side.
import type { RequestContext } from '../../lib/context.js';

/** The instructions a messages-format vendor adds to the prompt when tools are declared. */
const TOOLS_PREAMBLE = 350;

/**
 * offer-pick's input estimate (system prompt, tools and every message, counted once by the
 * gateway's own estimator), plus the tools preamble.
 */
export function localTokenEstimate(ctx: Pick<RequestContext, 'body' | 'estimatedInputTokens'>): number {
  const tools = Array.isArray(ctx.body.tools) && ctx.body.tools.length > 0;
  return ctx.estimatedInputTokens + (tools ? TOOLS_PREAMBLE : 0);
}
