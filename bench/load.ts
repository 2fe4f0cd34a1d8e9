// The load generator: node:http with a keep-alive agent, in the bench's own process. Closed loop
// (fixed concurrency, as fast as answers come) or open loop (one request every 1/rate seconds on an
// absolute schedule). Per request it allocates only what node:http itself needs: each in-flight
// slot is reused and its callbacks are bound once.
import http from 'node:http';
import { hrtime } from 'node:process';

export interface Target {
  port: number;
  /**
   * More ports of the same service (other gateway nodes): requests go round-robin over `port` and
   * these, each on its own keep-alive connections. The bench's own load balancer, without a proxy hop.
   */
  morePorts?: number[];
  path: string;
  /** Complete request headers, content-length included. */
  headers: http.OutgoingHttpHeaders;
  body: Buffer;
}

/** One response kept whole, for checking that the run measured what it meant to. */
export interface Sample {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface LoadResult {
  /** Completed with a 2xx status. */
  ok: number;
  errors: number;
  firstError?: string;
  /** From the first send to the last answer. */
  elapsedNs: number;
  /** Of the 2xx answers, sorted ascending, ns: send → end of body. */
  latencyNs: Float64Array;
  /** Sorted ascending, ns: send → first body byte. */
  ttfbNs: Float64Array;
  sample?: Sample;
  /** Open loop only: how late sends left against their schedule, sorted ascending, ns. */
  sendLateNs?: Float64Array;
  /** Open loop only: requests not sent because `maxInFlight` were already waiting (the server fell behind). */
  skipped?: number;
}

export function keepAliveAgent(maxSockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, noDelay: true });
}

/** Keeps up to `concurrency` requests in flight for `durationMs`, then waits for the last answers. */
export function closedLoop(target: Target, agent: http.Agent, concurrency: number, durationMs: number): Promise<LoadResult> {
  const run = new Run(target, agent);
  return new Promise((resolve) => {
    const deadline = run.start + BigInt(Math.round(durationMs * 1e6));
    const next = (slot: Slot) => {
      if (hrtime.bigint() < deadline) slot.send();
      else if (run.inFlight === 0) resolve(run.result());
    };
    for (let i = 0; i < concurrency; i++) new Slot(run, next).send();
  });
}

/**
 * Sends `rate` requests a second for `durationMs`, each at start + i/rate. A late timer is caught
 * up one request per event-loop turn (setImmediate), never by a burst of sends in one go. A server
 * that falls behind does not make the run longer: with `maxInFlight` unanswered, a due request is
 * skipped (and counted) instead of queued.
 */
export function openLoop(target: Target, agent: http.Agent, rate: number, durationMs: number, maxInFlight: number): Promise<LoadResult> {
  const run = new Run(target, agent);
  const total = Math.max(1, Math.round((rate * durationMs) / 1000));
  const periodNs = 1e9 / rate;
  const late = new Float64Array(total);
  const idle: Slot[] = [];
  let sent = 0;
  let skipped = 0;
  return new Promise((resolve) => {
    const finish = () => resolve({ ...run.result(), sendLateNs: late.sort(), skipped });
    const release = (slot: Slot) => {
      idle.push(slot);
      if (sent === total && run.inFlight === 0) finish();
    };
    const tick = () => {
      const due = sent * periodNs;
      const now = Number(hrtime.bigint() - run.start);
      if (now >= due) {
        late[sent++] = now - due;
        if (run.inFlight < maxInFlight) (idle.pop() ?? new Slot(run, release)).send();
        else skipped++;
        if (sent === total) {
          if (run.inFlight === 0) finish();
          return;
        }
      }
      const waitNs = sent * periodNs - Number(hrtime.bigint() - run.start);
      if (waitNs <= 0) setImmediate(tick);
      else setTimeout(tick, waitNs / 1e6);
    };
    tick();
  });
}

/** The shared state of one load run: request options and the recorded figures. */
class Run {
  /** One request options object per port, used round-robin. */
  private readonly optionsByPort: http.RequestOptions[];
  private nextPort = 0;
  readonly body: Buffer;
  readonly start = hrtime.bigint();
  inFlight = 0;
  private latency = new Float64Array(8192);
  private ttfb = new Float64Array(8192);
  private ok = 0;
  private errors = 0;
  private firstError?: string;
  private end = this.start;
  sample?: Sample;

  constructor(target: Target, agent: http.Agent) {
    this.optionsByPort = [target.port, ...(target.morePorts ?? [])].map((port) => ({
      host: '127.0.0.1', port, path: target.path, method: 'POST', headers: target.headers, agent,
    }));
    this.body = target.body;
  }

  /** The next request's options (the next port in turn). */
  options(): http.RequestOptions {
    const o = this.optionsByPort[this.nextPort];
    this.nextPort = (this.nextPort + 1) % this.optionsByPort.length;
    return o;
  }

  record(latencyNs: number, ttfbNs: number, end: bigint): void {
    if (this.ok === this.latency.length) {
      this.latency = grow(this.latency);
      this.ttfb = grow(this.ttfb);
    }
    this.latency[this.ok] = latencyNs;
    this.ttfb[this.ok++] = ttfbNs;
    this.end = end;
  }

  fail(reason: string, end: bigint): void {
    this.errors++;
    this.firstError ??= reason;
    this.end = end;
  }

  result(): LoadResult {
    return {
      ok: this.ok,
      errors: this.errors,
      firstError: this.firstError,
      elapsedNs: Number(this.end - this.start),
      latencyNs: this.latency.slice(0, this.ok).sort(),
      ttfbNs: this.ttfb.slice(0, this.ok).sort(),
      sample: this.sample,
    };
  }
}

function grow(a: Float64Array): Float64Array<ArrayBuffer> {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}

/** One request at a time, reused for the next one. */
class Slot {
  private t0 = 0n;
  private first = 0n;
  private status = 0;
  private live = false;
  /** Body chunks, kept only for the run's sample and for error answers. */
  private chunks?: Buffer[];
  private headers?: http.IncomingHttpHeaders;

  constructor(
    private readonly run: Run,
    private readonly done: (slot: Slot) => void,
  ) {}

  send(): void {
    this.live = true;
    this.first = 0n;
    this.run.inFlight++;
    this.t0 = hrtime.bigint();
    const req = http.request(this.run.options(), this.onResponse);
    req.on('error', this.onError);
    req.end(this.run.body);
  }

  private readonly onResponse = (res: http.IncomingMessage): void => {
    this.status = res.statusCode ?? 0;
    if (this.run.sample === undefined || this.status >= 300) {
      this.chunks = [];
      this.headers = res.headers;
    }
    res.on('data', this.onData);
    res.on('end', this.onEnd);
    res.on('error', this.onError);
  };

  private readonly onData = (chunk: Buffer): void => {
    if (this.first === 0n) this.first = hrtime.bigint();
    this.chunks?.push(chunk);
  };

  private readonly onEnd = (): void => {
    const end = hrtime.bigint();
    if (!this.live) return;
    let error: string | undefined;
    if (this.chunks) {
      const body = Buffer.concat(this.chunks).toString('utf8');
      if (this.status >= 300) error = `HTTP ${this.status}: ${body.slice(0, 300)}`;
      else this.run.sample ??= { status: this.status, headers: this.headers!, body };
      this.chunks = undefined;
    }
    this.finish(end, error);
  };

  private readonly onError = (err: Error): void => this.finish(hrtime.bigint(), err.message);

  private finish(end: bigint, error: string | undefined): void {
    if (!this.live) return;
    this.live = false;
    this.run.inFlight--;
    if (error === undefined) this.run.record(Number(end - this.t0), Number((this.first || end) - this.t0), end);
    else this.run.fail(error, end);
    this.done(this);
  }
}

/** The q-quantile (0..1) of an ascending array; NaN when empty. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
