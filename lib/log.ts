// Log output. Operator lines (lifecycle, store state changes, warnings, unexpected errors) go to
// stderr; the one line per request (lib/request-log.ts) goes to stdout. Both share the config's
// `log.level` and `log.format` (json: one JSON object a line; pretty: for people at a terminal).
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'pretty';
export type Logger = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export interface LogSettings {
  level: LogLevel;
  /** Absent: pretty when the stream is a terminal, json otherwise. */
  format?: LogFormat;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** process.stdout, process.stderr, or any stream taking text (tests). */
export type LogStream = { write(text: string): unknown; isTTY?: boolean };

/** One output stream with its level and format; `configure` applies a reloaded config. */
export class LogSink {
  private min = RANK.info;
  private pretty = false;
  /** Batched: this turn's lines, written at its end. */
  private pending = '';

  /**
   * `batched`: the lines written in one event-loop turn leave in one write at its end (stdout on a
   * pipe is written synchronously, one system call per write). Joined here rather than by corking
   * the stream: a stream's write costs about 1 µs per call even while corked.
   */
  constructor(
    readonly stream: LogStream,
    settings: LogSettings = { level: 'info', format: 'json' },
    private readonly batched = false,
  ) {
    this.configure(settings);
  }

  configure(settings: LogSettings): void {
    this.min = RANK[settings.level];
    this.pretty = (settings.format ?? (this.stream.isTTY ? 'pretty' : 'json')) === 'pretty';
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.min;
  }

  /** True when lines are JSON (a writer may then serialize a record itself: writeText). */
  get json(): boolean {
    return !this.pretty;
  }

  /** `record` starts with time, level and msg. */
  write(record: Record<string, unknown>): void {
    this.writeText(this.pretty ? prettyLine(record) : JSON.stringify(record) + '\n');
  }

  /** One whole line (newline included) in the sink's format. */
  writeText(line: string): void {
    if (!this.batched) {
      this.stream.write(line);
      return;
    }
    if (this.pending === '') setImmediate(this.flush);
    this.pending += line;
  }

  /** Write out what a batch holds (closing: the process may exit before the next turn). */
  readonly flush = (): void => {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.stream.write(text);
  };
}

/** A Logger writing to `sink`: errors become their stack (or message). */
export function createLogger(sink: LogSink): Logger {
  return (level, msg, fields) => {
    if (!sink.enabled(level)) return;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...fields };
    for (const k in line) if (line[k] instanceof Error) line[k] = (line[k] as Error).stack ?? (line[k] as Error).message;
    sink.write(line);
  };
}

/** `12:00:01.234 INFO  msg key=value …` (the date is left out: a terminal session is short). */
function prettyLine(record: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = record;
  let out = `${String(time).slice(11, 23)} ${String(level).toUpperCase().padEnd(5)} ${String(msg)}`;
  for (const k in rest) {
    const v = rest[k];
    if (v === undefined || v === null) continue;
    const text = typeof v === 'string' ? (/[\s"=]/.test(v) || v === '' ? JSON.stringify(v) : v) : JSON.stringify(v);
    out += ` ${k}=${text}`;
  }
  return out + '\n';
}

/** JSON lines on stderr at info and above: for commands and tests that have no config of their own. */
export const stderrLogger: Logger = createLogger(new LogSink(process.stderr));

export const silentLogger: Logger = () => {};
