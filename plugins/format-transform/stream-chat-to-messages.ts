// Stream conversion: chat-completion chunks → messages-format events, one chunk at a time.
// Messages blocks are strictly sequential while chat tool-call fragments may interleave: the first
// tool call streams live; calls that start while it is open are held (their arguments only) and
// sent whole when it closes.
import { randomUUID } from 'node:crypto';
import { StreamEvent, type StreamHook } from '../../lib/plugin.js';
import { jsonString } from '../../lib/json-string.js';
import { messageIdOf, messagesUsageOf, sanitizeToolId, stopReasonOf } from './shared.js';

export interface MessagesStreamOptions {
  /** The model the client asked for. */
  model: string;
  /** The gateway's estimate of the input tokens, for message_start (the upstream's count comes at the end). */
  inputTokens: number;
}

interface ToolCall {
  id: string;
  name: string;
  /** Arguments held while another call's block is open. */
  args: string;
  state: 'held' | 'open' | 'closed';
}

interface OpenBlock {
  kind: 'text' | 'thinking' | 'tool';
  index: number;
  /** thinking: text arrived as reasoning_content deltas. */
  streamed?: boolean;
  tool?: ToolCall;
}

const ev = (json: Record<string, any>): StreamEvent => StreamEvent.of(json, json.type);

export class ChatToMessagesStream implements StreamHook {
  private started = false;
  private ended = false;
  private nextIndex = 0;
  private open: OpenBlock | undefined;
  private readonly tools = new Map<number, ToolCall>();
  private held: ToolCall[] = [];
  private lastToolIndex = -1;
  private finishReason: string | null = null;
  private usage: unknown;
  private out: StreamEvent[] = [];

  constructor(private readonly opts: MessagesStreamOptions) {}

  onEvent(e: StreamEvent): StreamEvent[] | undefined {
    if (this.ended) return undefined;
    if (e.isDone) return this.end();
    // Most of a stream, once it started: a plain text delta (no usage, no finish), converted
    // without parsing it (text-delta.ts).
    const delta = e.textDelta;
    if (delta && this.started) {
      if (delta.text !== '') this.text(delta.text);
      return this.flush();
    }
    const j = e.json;
    if (!j || typeof j !== 'object') return undefined;
    this.begin(j.id);
    if (j.usage) this.usage = j.usage;
    const choice = j.choices?.[0];
    if (choice) {
      const d = choice.delta;
      if (d) {
        const reasoning = d.reasoning_content ?? d.reasoning;
        if (typeof reasoning === 'string' && reasoning !== '') this.thinking(reasoning);
        if (Array.isArray(d.reasoning_details)) for (const r of d.reasoning_details) this.reasoningDetail(r);
        if (typeof d.content === 'string' && d.content !== '') this.text(d.content);
        if (typeof d.refusal === 'string' && d.refusal !== '') this.text(d.refusal);
        if (Array.isArray(d.tool_calls)) for (const tc of d.tool_calls) this.toolFragment(tc);
      }
      // Content in the chunk that carries finish_reason was handled above, before the blocks close.
      if (choice.finish_reason) {
        this.finishReason = choice.finish_reason;
        this.closeAll();
      }
    } else if (j.usage && this.finishReason) {
      // The include_usage chunk comes last: the answer is complete.
      return this.end();
    }
    return this.flush();
  }

  onEnd(): StreamEvent[] | undefined {
    return this.ended ? undefined : this.end();
  }

  private flush(): StreamEvent[] | undefined {
    if (this.out.length === 0) return undefined;
    const out = this.out;
    this.out = [];
    return out;
  }

  private begin(id: unknown): void {
    if (this.started) return;
    this.started = true;
    this.out.push(
      ev({
        type: 'message_start',
        message: {
          id: messageIdOf(id),
          type: 'message',
          role: 'assistant',
          model: this.opts.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // Chat upstreams report usage only at the end: until message_delta brings it, the estimate
          // (clients that read usage per event would otherwise see a prompt of 0 tokens).
          usage: { input_tokens: this.opts.inputTokens, output_tokens: 0 },
        },
      }),
    );
  }

  private startBlock(kind: OpenBlock['kind'], contentBlock: Record<string, any>, tool?: ToolCall): OpenBlock {
    this.closeOpen();
    const b: OpenBlock = { kind, index: this.nextIndex++, tool };
    this.out.push(ev({ type: 'content_block_start', index: b.index, content_block: contentBlock }));
    this.open = b;
    return b;
  }

  private delta(index: number, delta: Record<string, any>): void {
    this.out.push(ev({ type: 'content_block_delta', index, delta }));
  }

  private closeOpen(): void {
    const b = this.open;
    if (!b) return;
    this.out.push(ev({ type: 'content_block_stop', index: b.index }));
    if (b.tool) b.tool.state = 'closed';
    this.open = undefined;
  }

  /** Close the open block, then send the held tool calls whole. */
  private closeAll(): void {
    this.closeOpen();
    for (const t of this.held) {
      const b = this.startTool(t);
      if (t.args !== '') this.delta(b.index, { type: 'input_json_delta', partial_json: t.args });
      t.args = '';
      this.closeOpen();
    }
    this.held = [];
  }

  private thinking(text: string): void {
    const b = this.open?.kind === 'thinking' ? this.open : this.startBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
    b.streamed = true;
    this.delta(b.index, { type: 'thinking_delta', thinking: text });
  }

  /**
   * A whole reasoning block: `thinking` with its signature (ending the block streamed as
   * reasoning_content, or standing alone) or `redacted_thinking`.
   */
  private reasoningDetail(r: any): void {
    if (r?.type === 'thinking') {
      let b = this.open?.kind === 'thinking' && this.open.streamed ? this.open : undefined;
      if (!b) {
        b = this.startBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
        if (r.thinking) this.delta(b.index, { type: 'thinking_delta', thinking: r.thinking });
      }
      if (r.signature) this.delta(b.index, { type: 'signature_delta', signature: r.signature });
      this.closeOpen();
    } else if (r?.type === 'redacted_thinking') {
      this.startBlock('thinking', { type: 'redacted_thinking', data: r.data });
      this.closeOpen();
    }
  }

  private text(text: string): void {
    if (this.open?.kind !== 'text') {
      this.closeAll();
      this.startBlock('text', { type: 'text', text: '' });
    }
    // The delta({ type: 'text_delta', text }) event, written out (a JSON.stringify less per event).
    const data = `{"type":"content_block_delta","index":${(this.open as OpenBlock).index},"delta":{"type":"text_delta","text":${jsonString(text)}}}`;
    this.out.push(new StreamEvent({ event: 'content_block_delta', data }));
  }

  private startTool(t: ToolCall): OpenBlock {
    t.state = 'open';
    return this.startBlock('tool', { type: 'tool_use', id: t.id, name: t.name, input: {} }, t);
  }

  private toolFragment(tc: any): void {
    // Fragments after the first carry only the index; a provider without indexes starts a call with an id.
    const k = typeof tc?.index === 'number' ? tc.index : tc?.id ? this.tools.size : Math.max(this.lastToolIndex, 0);
    this.lastToolIndex = k;
    const args: string = typeof tc?.function?.arguments === 'string' ? tc.function.arguments : '';
    let t = this.tools.get(k);
    if (!t) {
      t = {
        id: sanitizeToolId(tc?.id || `toolu_${randomUUID().replaceAll('-', '')}`),
        name: tc?.function?.name ?? '',
        args: '',
        state: 'held',
      };
      this.tools.set(k, t);
      if (this.open?.kind === 'tool') this.held.push(t);
      else this.startTool(t);
    } else if (t.state === 'held' && !t.name && tc?.function?.name) t.name = tc.function.name;
    if (args === '') return;
    if (t.state === 'open') this.delta((this.open as OpenBlock).index, { type: 'input_json_delta', partial_json: args });
    else if (t.state === 'held') t.args += args;
  }

  private end(): StreamEvent[] | undefined {
    this.begin(undefined);
    this.closeAll();
    const usage = this.usage ? messagesUsageOf(this.usage) : { output_tokens: 0 };
    this.out.push(
      ev({
        type: 'message_delta',
        delta: { stop_reason: stopReasonOf(this.finishReason, this.tools.size > 0), stop_sequence: null },
        usage,
      }),
    );
    this.out.push(ev({ type: 'message_stop' }));
    this.ended = true;
    return this.flush();
  }
}
