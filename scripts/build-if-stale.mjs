// `npm start` runs this first (prestart): after a `git pull` the sources can be newer than dist/,
// and serving the old build would look like the pull did nothing. Cheap when nothing changed: it
// compares file times with the stamp the last successful build left (`--stamp` writes it), and
// only then runs `npm run build`. Plain JavaScript: it must run before anything is built.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');

/** What the build reads: the TypeScript trees, the config schema, and what decides the compiler and libraries. */
const SOURCES = ['lib', 'plugins', 'bench', 'config/gateway.schema.json', 'tsconfig.json', 'package.json', 'package-lock.json'];

/** The first source file modified after `since` (ms), or undefined. */
function newerThan(since) {
  const walk = (path) => {
    let st;
    try {
      st = statSync(path);
    } catch {
      return undefined; // a source this checkout does not have
    }
    if (!st.isDirectory()) return st.mtimeMs > since ? path : undefined;
    for (const name of readdirSync(path)) {
      const found = walk(join(path, name));
      if (found) return found;
    }
    return undefined;
  };
  for (const s of SOURCES) {
    const found = walk(join(root, s));
    if (found) return found;
  }
  return undefined;
}

if (process.argv[2] === '--stamp') {
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
} else {
  let built = -Infinity;
  try {
    built = statSync(stamp).mtimeMs;
  } catch {
    // never built (or built before stamps existed)
  }
  const changed = newerThan(built);
  const why = built === -Infinity ? 'no build yet' : `${changed?.slice(root.length + 1)} changed since the last build`;
  if (changed && built !== -Infinity && !existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
    // An install without devDependencies (npm ci --omit=dev) cannot build: serve what was built
    // rather than not start at all (file times copied into an image need not mean a change).
    process.stderr.write(`${why}, but TypeScript is not installed to rebuild: serving the existing build\n`);
  } else if (changed) {
    process.stderr.write(`${why}: running npm run build\n`);
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    process.exitCode = r.status ?? 1;
  }
}
