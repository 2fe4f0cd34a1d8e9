// Calendar months in UTC, as 'YYYY-MM', with the current month's bounds cached so the hot path
// compares two numbers instead of formatting a date.
export class MonthClock {
  private start = 0;
  private end = 0;
  private label = '';

  constructor(private readonly clock: () => number) {}

  now(): number {
    return this.clock();
  }

  /** The month of `at` (default: now). */
  month(at = this.clock()): string {
    if (at < this.start || at >= this.end) {
      const d = new Date(at);
      const y = d.getUTCFullYear(), m = d.getUTCMonth();
      this.start = Date.UTC(y, m, 1);
      this.end = Date.UTC(y, m + 1, 1);
      this.label = `${y}-${String(m + 1).padStart(2, '0')}`;
    }
    return this.label;
  }
}
