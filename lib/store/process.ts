// Whether a process id names a running process: hold rows carry their owner's pid, and holds of a
// process that is gone are abandoned.

/** Signal 0 checks without signalling; EPERM means it runs under another user. */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
