// Stream conversion: messages-format events → chat-completion chunks, one event at a time.
// Only a thinking block's text is kept (until its stop), to hand it out with its signature.
import { StreamEvent, type StreamHook } from '../../lib/plugin.js';
import { jsonString } from '../../lib/json-string.js';
import { chatIdOf, chatUsageOf, finishReasonOf } from './shared.js';

export interface ChatStreamOptions {
  /** The model the client asked for. */
  model: string;
  /** Unix seconds. */
  created: number;
  /** The client asked for stream_options.include_usage: send the usage chunk. */
  includeUsage: boolean;
}

type Out = StreamEvent | StreamEvent[] | undefined;

interface Block {
  kind: 'text' | 'thinking' | 'tool' | 'other';
  /** tool: position among this turn's tool calls (chat's tool_calls index). */
  toolIndex?: number;
  /** tool: the input came whole in the start event; later deltas would repeat it. */
  inputInStart?: boolean;
  thinking?: string;
  signature?: string;
}

const DONE_DATA = '[DONE]';
/** Where chunk({ content: '' })'s text holds its content (the id and model come before it, quoted). */
const EMPTY_CONTENT = '"delta":{"content":""}';

export class MessagesToChatStream implements StreamHook {
  private id = chatIdOf(undefined);
  private started = false;
  private finished = false;
  private done = false;
  private readonly blocks: Block[] = [];
  private toolCount = 0;
  private stopReason: string | null = null;
  private usage: Record<string, any> = {};
  /** chunk({ content }) as text, around its content (made once the id is known). */
  private contentText: { before: string; after: string } | undefined;

  constructor(private readonly opts: ChatStreamOptions) {}

  onEvent(ev: StreamEvent): Out {
    if (this.done) return undefined;
    // Most of a stream: a plain text delta, converted without parsing it (text-delta.ts).
    const delta = ev.textDelta;
    if (delta) return this.blocks[delta.index!]?.kind === 'text' && delta.text ? this.contentChunk(delta.text) : undefined;
    const j = ev.json;
    switch (j?.type) {
      case 'message_start':
        if (j.message?.id) {
          this.id = chatIdOf(j.message.id);
          this.contentText = undefined;
        }
        this.mergeUsage(j.message?.usage);
        return this.begin();
      case 'content_block_start':
        return this.blockStart(j.index, j.content_block);
      case 'content_block_delta':
        return this.blockDelta(this.blocks[j.index], j.delta);
      case 'content_block_stop':
        return this.blockStop(j.index);
      case 'message_delta':
        if (j.delta?.stop_reason) this.stopReason = j.delta.stop_reason;
        this.mergeUsage(j.usage);
        return this.finish();
      case 'message_stop':
        return this.end();
      default:
        return undefined; // ping and event types this conversion does not know
    }
  }

  onEnd(): StreamEvent[] | undefined {
    return this.done ? undefined : this.end();
  }

  private chunk(delta: Record<string, any>, finishReason: string | null = null): StreamEvent {
    return StreamEvent.of({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.opts.created,
      model: this.opts.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    });
  }

  /**
   * chunk({ content: text }) with only its text serialized per event: the rest is chunk()'s own
   * text, split once per stream around an empty content (a JSON.stringify less per event, and the
   * text delta it comes from was not parsed).
   */
  private contentChunk(text: string): StreamEvent {
    if (!this.contentText) {
      const whole = this.chunk({ content: '' }).data;
      const at = whole.indexOf(EMPTY_CONTENT) + EMPTY_CONTENT.indexOf('""}');
      this.contentText = { before: whole.slice(0, at), after: whole.slice(at + 2) };
    }
    return new StreamEvent({ data: this.contentText.before + jsonString(text) + this.contentText.after });
  }

  /** The first chunk carries the role; it is sent once, before anything else. */
  private begin(): Out {
    if (this.started) return undefined;
    this.started = true;
    return this.chunk({ role: 'assistant', content: '' });
  }

  private withBegin(ev: StreamEvent): Out {
    const first = this.begin();
    return first ? [first as StreamEvent, ev] : ev;
  }

  private blockStart(index: number, cb: any): Out {
    switch (cb?.type) {
      case 'text':
        this.blocks[index] = { kind: 'text' };
        return cb.text ? this.withBegin(this.chunk({ content: cb.text })) : this.begin();
      case 'thinking':
        this.blocks[index] = { kind: 'thinking', thinking: cb.thinking ?? '', signature: cb.signature ?? '' };
        return cb.thinking ? this.withBegin(this.chunk({ reasoning_content: cb.thinking })) : this.begin();
      case 'redacted_thinking':
        this.blocks[index] = { kind: 'other' };
        return this.withBegin(this.chunk({ reasoning_details: [{ type: 'redacted_thinking', data: cb.data }] }));
      case 'tool_use': {
        const toolIndex = this.toolCount++;
        const inputInStart = cb.input !== null && typeof cb.input === 'object' && Object.keys(cb.input).length > 0;
        this.blocks[index] = { kind: 'tool', toolIndex, inputInStart };
        const fn = { name: cb.name, arguments: inputInStart ? JSON.stringify(cb.input) : '' };
        return this.withBegin(this.chunk({ tool_calls: [{ index: toolIndex, id: cb.id, type: 'function', function: fn }] }));
      }
      default:
        this.blocks[index] = { kind: 'other' }; // server-tool blocks have no chat counterpart
        return undefined;
    }
  }

  private blockDelta(b: Block | undefined, d: any): Out {
    if (!b) return undefined;
    switch (d?.type) {
      case 'text_delta':
        return b.kind === 'text' && d.text ? this.chunk({ content: d.text }) : undefined;
      case 'input_json_delta':
        if (b.kind !== 'tool' || b.inputInStart || !d.partial_json) return undefined;
        return this.chunk({ tool_calls: [{ index: b.toolIndex, function: { arguments: d.partial_json } }] });
      case 'thinking_delta':
        if (b.kind !== 'thinking' || !d.thinking) return undefined;
        b.thinking += d.thinking;
        return this.chunk({ reasoning_content: d.thinking });
      case 'signature_delta':
        if (b.kind === 'thinking') b.signature = d.signature;
        return undefined;
      default:
        return undefined; // citations have no chat counterpart
    }
  }

  /** A thinking block ends with its whole text and signature, for the client to pass back unchanged. */
  private blockStop(index: number): Out {
    const b = this.blocks[index];
    if (b?.kind !== 'thinking') return undefined;
    const detail = { type: 'thinking', thinking: b.thinking, signature: b.signature };
    b.thinking = undefined;
    return this.chunk({ reasoning_details: [detail] });
  }

  /** Messages-format usage counters are cumulative: the latest non-null value wins. */
  private mergeUsage(u: any): void {
    if (!u) return;
    for (const k in u) if (u[k] !== null && u[k] !== undefined) this.usage[k] = u[k];
  }

  private finish(): Out {
    if (this.finished) return undefined;
    this.finished = true;
    return this.withBegin(this.chunk({}, finishReasonOf(this.stopReason, this.toolCount > 0)));
  }

  private end(): StreamEvent[] {
    const out: StreamEvent[] = [];
    const fin = this.finish();
    if (fin) out.push(...(Array.isArray(fin) ? fin : [fin]));
    if (this.opts.includeUsage) {
      out.push(
        StreamEvent.of({
          id: this.id,
          object: 'chat.completion.chunk',
          created: this.opts.created,
          model: this.opts.model,
          choices: [],
          usage: chatUsageOf(this.usage),
        }),
      );
    }
    out.push(new StreamEvent({ data: DONE_DATA }));
    this.done = true;
    return out;
  }
}
