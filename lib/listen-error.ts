// A listener that cannot open its port: one line naming the address and the reason, so the command
// line can add what to change (a config key, a flag) instead of printing Node's stack trace.
const REASONS: Record<string, string> = {
  EADDRINUSE: 'is in use by another process',
  EACCES: 'needs privileges this process lacks (ports below 1024)',
  EADDRNOTAVAIL: 'is on an address this machine does not have',
};

export class ListenError extends Error {
  constructor(readonly host: string, readonly port: number, readonly code: string) {
    super(`port ${port} on ${host} ${REASONS[code]}`);
    this.name = 'ListenError';
  }
}

/** `err` from a server's 'error' event while listening: a ListenError when the address is the problem. */
export function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  return err.code && err.code in REASONS ? new ListenError(host, port, err.code) : err;
}
