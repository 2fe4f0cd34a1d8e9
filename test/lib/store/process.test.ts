// processRuns: whether a hold's owner process still runs.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { processRuns } from '../../../lib/store/process.js';

t.test('this process runs; a process that exited does not', async (t) => {
  t.equal(processRuns(process.pid), true);
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  t.equal(processRuns(child.pid!), false);
});
