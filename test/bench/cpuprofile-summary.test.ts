// The profile summary reads every file it is given, with or without --top.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/package-root.js';

const script = join(packageRoot(), 'dist', 'bench', 'cpuprofile-summary.js');
const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });
// Three samples of `hot`, one of `cold`, one idle (left out of the busy time).
const profile = {
  nodes: [
    { id: 1, callFrame: frame('hot', 'file:///x/a.js') },
    { id: 2, callFrame: frame('cold', 'file:///x/b.js') },
    { id: 3, callFrame: frame('(idle)') },
  ],
  samples: [1, 1, 2, 1, 3],
  timeDeltas: [1000, 1000, 1000, 1000, 5000],
};

t.test('a lone profile file is summarized; --top limits the lines', async (t) => {
  const file = join(t.testdir(), 'one.cpuprofile');
  writeFileSync(file, JSON.stringify(profile));
  const all = execFileSync(process.execPath, [script, file], { encoding: 'utf8' });
  t.match(all, `${file}: 4 ms busy`);
  t.match(all, /75\.0%\s+hot a\.js:1/);
  t.match(all, /25\.0%\s+cold b\.js:1/);
  const top = execFileSync(process.execPath, [script, file, '--top', '1'], { encoding: 'utf8' });
  t.match(top, /75\.0%\s+hot a\.js:1/);
  t.notMatch(top, /cold/);
});
