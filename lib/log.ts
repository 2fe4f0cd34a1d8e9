// Operator-facing log lines (lifecycle, warnings, unexpected errors) as JSON on stderr.
// Not written per request: the request history is the per-request record.
export type LogLevel = 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export const stderrLogger: Logger = (level, msg, fields) => {
  const line: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...fields };
  for (const [k, v] of Object.entries(line)) if (v instanceof Error) line[k] = v.stack ?? v.message;
  process.stderr.write(JSON.stringify(line) + '\n');
};

export const silentLogger: Logger = () => {};
