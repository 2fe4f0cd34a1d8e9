// Everything an upstream says is untrusted text: an error message can echo the request's headers
// (the provider's key among them) or a masked fragment of the key. Texts that leave the process or
// are stored (client errors, history, log lines) go through a Scrubber first.

const REDACTED = '[redacted]';

/**
 * Secret-shaped strings, whoever's they are: credential headers and fields with their values,
 * bearer tokens, and the key formats of the common vendors (including masked ones such as
 * "sk-proj-****abcd").
 */
const SECRET_SHAPES: RegExp[] = [
  /\b(authorization|proxy-authorization|x-api-key|api[-_]?key|x-goog-api-key|access[-_]?token|secret|password|cookie)(["']?\s*[:=]\s*["']?)(bearer\s+|basic\s+)?[^\s"',;}]+/gi,
  /\bbearer\s+[A-Za-z0-9._~+/=*-]{8,}/gi,
  /\bsk-[A-Za-z0-9_*.-]{6,}/g,
  /\b(AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
];

/** Fragments of a known secret this long or longer are removed wherever they appear. */
const FRAGMENT = 8;
/** Shorter known secrets are removed where they appear whole; shorter still would hit ordinary words. */
const MIN_SECRET = 4;

export class Scrubber {
  private readonly secrets: string[];

  /** `secrets`: values known to be secret (the providers' keys); short or empty ones are ignored. */
  constructor(secrets: Iterable<string | undefined>) {
    this.secrets = [...new Set([...secrets].filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET))];
  }

  scrub(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = removeFragments(out, secret);
    for (const shape of SECRET_SHAPES) {
      out = out.replace(shape, (match, name?: string, sep?: string) =>
        typeof name === 'string' && typeof sep === 'string' && match.startsWith(name) ? `${name}${sep}${REDACTED}` : REDACTED,
      );
    }
    return out;
  }
}

/**
 * Remove every run of FRAGMENT or more characters that also occurs in `secret`. Windows of the
 * secret starting every FRAGMENT/2 characters find any such run of 1.5×FRAGMENT or more; each hit
 * is then widened as far as text and secret agree on both sides.
 */
function removeFragments(text: string, secret: string): string {
  if (secret.length < FRAGMENT) return text.split(secret).join(REDACTED);
  if (text.length < FRAGMENT) return text;
  const spans: Array<[number, number]> = [];
  const step = FRAGMENT / 2;
  for (let k = 0; k + FRAGMENT <= secret.length; k += step) {
    const window = secret.slice(k, k + FRAGMENT);
    for (let at = text.indexOf(window); at !== -1; at = text.indexOf(window, at + 1)) {
      let start = at;
      let ks = k;
      while (start > 0 && ks > 0 && text[start - 1] === secret[ks - 1]) (start--, ks--);
      let end = at + FRAGMENT;
      let ke = k + FRAGMENT;
      while (end < text.length && ke < secret.length && text[end] === secret[ke]) (end++, ke++);
      spans.push([start, end]);
    }
  }
  if (!spans.length) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let pos = 0;
  for (const [start, end] of spans) {
    if (end <= pos) continue;
    out += text.slice(pos, Math.max(pos, start)) + (start >= pos ? REDACTED : '');
    pos = end;
  }
  return out + text.slice(pos);
}
