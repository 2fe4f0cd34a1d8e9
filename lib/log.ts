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

/**
 * Batched lines wait at most this long for their write: a line is for people and log pipelines,
 * which a fiftieth of a second does not hold up, and one write per batch instead of one per
 * event-loop turn saves a system call (3 µs on a virtual machine) and a wake-up of the reader for
 * nearly every line at moderate load, where each request has a turn of its own.
 */
const BATCH_MS = 20;
/** A batch this long leaves at once: a write that fits a pipe's buffer (64 KB) does not wait for the reader. */
const BATCH_CHARS = 32_768;

/** One output stream with its level and format; `configure` applies a reloaded config. */
export class LogSink {
  private min = RANK.info;
  private pretty = false;
  /** Batched: the lines waiting for their write. */
  private pending = '';
  private timer: NodeJS.Timeout | undefined;

  /**
   * `batched`: lines are joined and leave in one write when the first of them is BATCH_MS old (or
   * the batch is full, or the process exits). Joined here rather than by corking the stream: a
   * stream's write costs about 1 µs per call even while corked.
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
    if (this.pending === '') {
      // One timer for the sink's life, restarted by each batch; unref'd: it never keeps the process up.
      (this.timer ??= setTimeout(this.flush, BATCH_MS).unref()).refresh();
      // A process that exits (a crash included) first writes what waits; SIGKILL loses at most BATCH_MS of lines.
      process.once('exit', this.flush);
    }
    this.pending += line;
    if (this.pending.length >= BATCH_CHARS) this.flush();
  }

  /** Write out what the batch holds now (closing, or a test about to read the stream). */
  readonly flush = (): void => {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    process.removeListener('exit', this.flush);
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
