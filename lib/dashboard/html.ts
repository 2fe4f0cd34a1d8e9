// HTML by tagged template: every interpolated value is escaped unless it is already Html, so page
// code cannot forget to escape what a user typed (key names, emails, model ids, error texts).
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type Value = Html | string | number | boolean | null | undefined | readonly Value[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ENTITIES[c]);

/** null, undefined and false render as nothing (for `cond && html\`…\``); arrays are joined. */
function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}
