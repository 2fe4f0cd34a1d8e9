// A local input-token count for a messages-format count_tokens body, for offers whose upstream
// cannot count (chat-format providers have no count route). It errs on the high side.
import { estimateInputTokens } from '../../lib/tokens.js';

/** The instructions a messages-format vendor adds to the prompt when tools are declared. */
const TOOLS_PREAMBLE = 350;

/** System prompt, tools and every message, counted with the gateway's own estimator. */
export function localTokenEstimate(body: Record<string, any>): number {
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  return estimateInputTokens(body, 'messages') + (tools ? TOOLS_PREAMBLE : 0);
}
