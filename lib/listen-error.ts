// A listener that cannot open its port: one line naming the address and the reason, so the command
// line can add what to change (a config key, a flag) instead of printing Node's stack trace.
import type { Server } from 'node:net';

const REASONS: Record<string, string> = {
  EADDRINUSE: 'is in use by another process',
  EACCES: 'needs privileges this process lacks (ports below 1024)',
  EADDRNOTAVAIL: 'is on an address this machine does not have',
};

export class ListenError extends Error {
  /** `block`: the config block whose host and port these are (server, metrics), if any. */
  constructor(readonly host: string, readonly port: number, readonly code: string, readonly block?: string) {
    super(`port ${port} on ${host} ${REASONS[code]}`);
    this.name = 'ListenError';
  }

  /** The config key to change: the port, or the host when the address is not this machine's. */
  get setting(): string {
    return `${this.block ?? 'server'}.${this.code === 'EADDRNOTAVAIL' ? 'host' : 'port'}`;
  }
}

/** Listen on host:port; a problem with the address rejects with a ListenError (other errors as they are). */
export function listen(server: Server, port: number, host: string, block?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) =>
      reject(err.code && err.code in REASONS ? new ListenError(host, port, err.code, block) : err);
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}
