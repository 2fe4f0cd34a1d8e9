// Output text produced so far, for estimating output tokens when the upstream reports no usage.
// Tokenizing happens only if the estimate is asked for; only the first SAMPLE_CHARS are kept, and
// a longer text is estimated from that sample's tokens per character, so memory stays bounded.
// The estimate aims at the true count and errs low (a charge should not bill tokens that may not
// exist): plain text is counted by the tokenizer (within ±8% of the vendors' own counts on the
// recorded replies); a tool call also costs its name and the vendor's framing tokens around it.
import { countTextTokens } from '../../lib/tokens.js';

const SAMPLE_CHARS = 65_536;
/**
 * Framing tokens per tool call besides its name and arguments: about 15 in the chat vendor's recorded
 * parallel calls and about 36 in the messages vendor's; the lower one keeps the estimate below both.
 */
export const TOOL_CALL_TOKENS = 12;

export class OutputText {
  private sample: string[] = [];
  private sampled = 0;
  private chars = 0;
  private toolCalls = 0;

  /** A tool call began: its name is text the model produced, and its framing costs tokens too. */
  addToolCall(name: unknown): void {
    this.toolCalls++;
    this.add(name);
  }

  add(text: unknown): void {
    if (typeof text !== 'string' || text === '') return;
    this.chars += text.length;
    if (this.sampled < SAMPLE_CHARS) {
      const piece = text.length <= SAMPLE_CHARS - this.sampled ? text : text.slice(0, SAMPLE_CHARS - this.sampled);
      this.sample.push(piece);
      this.sampled += piece.length;
    }
  }

  tokens(): number {
    const framing = this.toolCalls * TOOL_CALL_TOKENS;
    if (this.chars === 0) return framing;
    const sampleTokens = countTextTokens(this.sample.join(''));
    return framing + (this.chars === this.sampled ? sampleTokens : Math.ceil((sampleTokens * this.chars) / this.sampled));
  }
}
