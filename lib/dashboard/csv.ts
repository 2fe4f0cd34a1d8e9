// CSV as RFC 4180 has it (CRLF line ends, fields with a comma, quote or line break quoted, quotes
// doubled), with a guard for spreadsheets: a text cell starting with = + - @ (or a tab or carriage
// return) would run as a formula, so it gets a leading apostrophe.
export type Cell = string | number | null;

const FORMULA_START = /^[=+\-@\t\r]/;

function field(value: Cell): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  // A plain decimal ("-0.25") is data in every spreadsheet, not a formula.
  const text = FORMULA_START.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csv(rows: readonly (readonly Cell[])[]): string {
  return rows.map((r) => r.map(field).join(',') + '\r\n').join('');
}
