// `npm start` builds first when the sources are newer than the last build (after a `git pull`), and
// only then. Run with the real npm in a scratch package whose "build" only counts its runs.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../lib/store/fixtures/store.js';
import { childEnv } from '../helpers/process.js';

const script = join(import.meta.dirname, '../../scripts/build-if-stale.mjs');

function scratchPackage(t: Test, build: string) {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'scripts'));
  mkdirSync(join(dir, 'lib'));
  mkdirSync(join(dir, 'config'));
  copyFileSync(script, join(dir, 'scripts/build-if-stale.mjs'));
  const real = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({
    name: 'scratch', private: true,
    // The real prestart and start scripts, around a build that counts its runs.
    scripts: { build: `${build} && node scripts/build-if-stale.mjs --stamp`, prestart: real.scripts.prestart, start: 'node -e "console.log(\'served\')"' },
  }));
  writeFileSync(join(dir, 'lib/a.ts'), 'export const a = 1;\n');
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/.bin/tsc'), ''); // the compiler is installed (its absence: the last test)
  writeFileSync(join(dir, 'config/gateway.yaml'), 'server: {}\n');
  const builds = () => (existsSync(join(dir, 'builds.log')) ? readFileSync(join(dir, 'builds.log'), 'utf8').length : 0);
  const start = () => spawnSync('npm', ['start', '--silent'], { cwd: dir, encoding: 'utf8', env: childEnv(), timeout: 60_000 });
  /** Set a file's modification time `seconds` from now. */
  const age = (file: string, seconds: number) => utimesSync(join(dir, file), new Date(), new Date(Date.now() + seconds * 1000));
  return { dir, builds, start, age, real };
}

t.test('npm start: builds when there is no build or a source is newer, not otherwise', async (t) => {
  const p = scratchPackage(t, `node -e "require('fs').appendFileSync('builds.log', 'b')"`);
  t.match(p.real.scripts.build, /build-if-stale\.mjs --stamp$/, 'the real build leaves the stamp');

  let r = p.start();
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /served/);
  t.match(r.stderr, /no build yet: running npm run build/);
  t.equal(p.builds(), 1);

  r = p.start();
  t.equal(p.builds(), 1, 'nothing changed: no build');
  t.equal(r.stderr, '');

  // A pull changed a source after the last build.
  p.age('dist/.build-stamp', -60);
  p.age('lib/a.ts', -1);
  r = p.start();
  t.match(r.stderr, /lib\/a\.ts changed since the last build: running npm run build/);
  t.equal(p.builds(), 2);
  t.match(r.stdout, /served/);

  // The operator's config is not a source.
  for (const source of ['lib/a.ts', 'package.json']) p.age(source, -120);
  p.age('dist/.build-stamp', -60);
  p.age('config/gateway.yaml', 0);
  p.start();
  t.equal(p.builds(), 2, 'a config edit does not rebuild');
});

t.test('npm start: a failed build stops it (nothing stale is served)', async (t) => {
  const p = scratchPackage(t, 'node -e "process.exit(3)"');
  const r = p.start();
  t.not(r.status, 0);
  t.notMatch(r.stdout, /served/);
  p.age('lib/a.ts', -120);
  t.not(p.start().status, 0, 'still unbuilt: tried again');
});

t.test('npm start without TypeScript installed (npm ci --omit=dev) serves the existing build', async (t) => {
  const p = scratchPackage(t, `node -e "require('fs').appendFileSync('builds.log', 'b')"`);
  p.start();
  t.equal(p.builds(), 1);
  rmSync(join(p.dir, 'node_modules'), { recursive: true });
  p.age('dist/.build-stamp', -60);
  const r = p.start();
  t.equal(r.status, 0);
  t.match(r.stderr, /lib\/a\.ts changed since the last build, but TypeScript is not installed to rebuild: serving the existing build/);
  t.match(r.stdout, /served/);
  t.equal(p.builds(), 1);
});
