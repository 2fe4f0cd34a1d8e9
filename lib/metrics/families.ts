// Counters and histograms whose series the request path updates as plain numbers. prom-client's own
// children look their series up by a string built from the label values on every inc() or
// observe() (about 0.4 µs each, a dozen per request): here a series is a cell found once (the
// recorder caches it) and updated with an addition; prom-client formats the families at scrape time
// through its Registry, which takes any metric with a `get()`.
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

export class CounterCell {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(n = 1): void {
    this.value += n;
  }
}

export class HistogramCell {
  /** Observations per bucket (not cumulative); the last slot: above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly labels: Labels, private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    // The first bound at or above v (binary search: a score of bounds).
    let lo = 0;
    let hi = this.bounds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.bounds[mid] < v) lo = mid + 1;
      else hi = mid;
    }
    this.counts[lo]++;
    this.sum += v;
    this.count++;
  }
}

abstract class Family<C> {
  protected readonly cells = new Map<string, C>();
  constructor(
    readonly name: string,
    readonly help: string,
    protected readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of these label values (in labelNames order), made on first use. Not for the hot path: cache it. */
  cell(...values: string[]): C {
    const key = values.join('\u0000');
    let c = this.cells.get(key);
    if (!c) {
      const labels: Labels = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]));
      this.cells.set(key, (c = this.make(labels)));
    }
    return c;
  }

  protected abstract make(labels: Labels): C;
}

export class CounterFamily extends Family<CounterCell> {
  readonly type = 'counter';
  protected make(labels: Labels): CounterCell {
    return new CounterCell(labels);
  }
  get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values: [...this.cells.values()].map((c) => ({ labels: c.labels, value: c.value })) };
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  readonly type = 'histogram';
  constructor(name: string, help: string, labelNames: readonly string[], private readonly bounds: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }
  protected make(labels: Labels): HistogramCell {
    return new HistogramCell(labels, this.bounds);
  }
  get() {
    const values: { metricName: string; labels: Labels | Record<string, string | number>; value: number }[] = [];
    for (const c of this.cells.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += c.counts[i];
        values.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: '+Inf' }, value: c.count });
      values.push({ metricName: `${this.name}_sum`, labels: c.labels, value: c.sum });
      values.push({ metricName: `${this.name}_count`, labels: c.labels, value: c.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}
