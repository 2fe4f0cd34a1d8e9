// Reading Prometheus text format in tests: scrape a URL and look samples up by name and labels.
import http from 'node:http';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

export class Scrape {
  constructor(readonly samples: Sample[]) {}

  /** Samples of `name` whose labels include `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The sum of the matching samples (0 when none). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.find(name, labels).reduce((a, s) => a + s.value, 0);
  }

  names(): Set<string> {
    return new Set(this.samples.map((s) => s.name));
  }
}

export function get(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    }).on('error', reject);
  });
}

export async function scrape(url: string): Promise<Scrape> {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`scrape ${url}: ${r.status} ${r.text}`);
  return new Scrape(parseSamples(r.text));
}
