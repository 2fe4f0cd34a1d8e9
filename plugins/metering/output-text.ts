// Output text produced so far, for estimating output tokens when the upstream reports no usage.
// Tokenizing happens only if the estimate is asked for; only the first SAMPLE_CHARS are kept, and
// a longer text is estimated from that sample's tokens per character, so memory stays bounded.
import { countTextTokens } from '../../lib/tokens.js';

const SAMPLE_CHARS = 65_536;

export class OutputText {
  private sample: string[] = [];
  private sampled = 0;
  private chars = 0;

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
    if (this.chars === 0) return 0;
    const sampleTokens = countTextTokens(this.sample.join(''));
    return this.chars === this.sampled ? sampleTokens : Math.ceil((sampleTokens * this.chars) / this.sampled);
  }
}
