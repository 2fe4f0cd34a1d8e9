// A TCP relay on 127.0.0.1 port 0 to another address, that a test can cut (every connection reset,
// new ones refused at once, as a database that went away) and restore.
import net, { type AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Reset every open connection and every new one until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) return void client.resetAndDestroy();
    const upstream = net.connect(target.port, target.host);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      down = true;
      for (const s of open) s.resetAndDestroy();
      open.clear();
    },
    restore() {
      down = false;
    },
    close() {
      down = true;
      for (const s of open) s.resetAndDestroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
