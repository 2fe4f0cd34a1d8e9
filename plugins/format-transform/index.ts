// format-transform: shapes each attempt's upstream body for the offer's wire format and converts the
// answer back to the client's format. Same-format traffic is passed through with only the model renamed.
import { AnswerText, type Plugin, type PluginEnv, type StreamHook, type UpstreamRequest } from '../../lib/plugin.js';
import type { RequestContext } from '../../lib/context.js';
import { chatToMessagesRequest } from './chat-to-messages.js';
import { messagesToChatRequest } from './messages-to-chat.js';
import { chatCompletionOf } from './response-messages-to-chat.js';
import { messageOf } from './response-chat-to-messages.js';
import { MessagesToChatStream } from './stream-messages-to-chat.js';
import { ChatToMessagesStream } from './stream-chat-to-messages.js';
import { chatPassthrough, messagesPassthrough, renamedAnswer } from './passthrough.js';
import { localTokenEstimate } from './token-estimate.js';
import { offerOutputBudget, SUBSCRIPTION_MIN_OUTPUT } from '../offer-pick/index.js';

export { localTokenEstimate };

export default function formatTransform(_env: PluginEnv): Plugin {
  return {
    name: 'format-transform',

    onRequest(ctx: RequestContext): void {
      // count_tokens: the chosen offer counts when it speaks messages (failing over only to other
      // messages offers); a chat upstream has no such route, and a completion would be billable,
      // so then the answer is a local estimate.
      if (ctx.route !== 'count_tokens') return;
      if (ctx.candidates[0]?.provider.format === 'messages') ctx.candidates = ctx.candidates.filter((o) => o.provider.format === 'messages');
      else ctx.reply = { status: 200, body: { input_tokens: localTokenEstimate(ctx) } };
    },

    onAttempt(ctx: RequestContext, up: UpstreamRequest): void {
      if (up.format === ctx.clientFormat) {
        // From up.body: offer-pick has left out what this offer may not be sent.
        const body: Record<string, any> = { ...up.body };
        if (up.format === 'chat') {
          // The upstream stops at the budget the hold covers: a charge above it would be clipped.
          // max_completion_tokens wins over max_tokens (spec 4.2), so only it goes upstream.
          if (body.max_completion_tokens !== undefined) delete body.max_tokens;
          else if (body.max_tokens === undefined) body.max_completion_tokens = defaultOutputBudget(ctx, up);
          // Billing needs the usage chunk; the stream hook drops it again unless the client asked.
          if (ctx.stream) body.stream_options = { ...body.stream_options, include_usage: true };
        }
        up.body = body;
      } else if (up.format === 'messages') {
        up.body = chatToMessagesRequest(ctx.body, { defaultMaxTokens: defaultOutputBudget(ctx, up), stream: ctx.stream });
      } else {
        up.body = messagesToChatRequest(ctx.body, { stream: ctx.stream });
      }
      if (up.offer.subscription && ctx.route !== 'count_tokens') askAtLeastSubscriptionMinimum(up);
    },

    onResponseBody(ctx: RequestContext, body: any, up: UpstreamRequest, text?: string): any {
      const model = answerModel(ctx);
      if (up.format !== ctx.clientFormat) {
        return up.format === 'messages' ? chatCompletionOf(body, model, createdOf(ctx)) : messageOf(body, model);
      }
      // count_tokens answers carry no model.
      if (ctx.route === 'count_tokens' || !body || typeof body !== 'object' || !('model' in body)) return text === undefined ? body : new AnswerText(text);
      // The client gets the upstream's own text (its usage was read from the parsed body); the
      // parsed body is renamed too, for the hooks after this one.
      const answer = text === undefined ? undefined : renamedAnswer(text, body, model);
      body.model = model;
      return answer ?? body;
    },

    onStream(ctx: RequestContext, up: UpstreamRequest): StreamHook {
      const model = answerModel(ctx);
      const includeUsage = ctx.body.stream_options?.include_usage === true;
      if (up.format === ctx.clientFormat) {
        return up.format === 'messages' ? messagesPassthrough(model) : chatPassthrough(model, includeUsage);
      }
      return up.format === 'messages'
        ? new MessagesToChatStream({ model, created: createdOf(ctx), includeUsage })
        : new ChatToMessagesStream({ model, inputTokens: Math.ceil(ctx.estimatedInputTokens) });
    },
  };
}

/**
 * A subscription-backed offer's minimum effective output budget (spec section 8) is the budget the
 * upstream is asked for, not only the one the hold covers; the charge stays the actual usage.
 * up.body is this attempt's own object on every path above: one field is raised in place.
 */
function askAtLeastSubscriptionMinimum(up: UpstreamRequest): void {
  // After the shaping above a chat body carries exactly one of the two, a messages body max_tokens.
  const field = up.format === 'chat' && up.body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  if (up.body[field] < SUBSCRIPTION_MIN_OUTPUT) up.body[field] = SUBSCRIPTION_MIN_OUTPUT;
}

/**
 * The model the answer names: the one that served, by its id; a request that named it by an alias
 * gets the id, as the vendors answer for their own aliases.
 */
const answerModel = (ctx: RequestContext): string => ctx.model?.id ?? ctx.body.model;

/** A chat client gave no output budget: the one the hold was sized for on this offer. */
const defaultOutputBudget = (ctx: RequestContext, up: UpstreamRequest): number => offerOutputBudget(up.offer, ctx.outputBudget, false);

const createdOf = (ctx: RequestContext): number => Math.floor(ctx.receivedAt / 1000);
