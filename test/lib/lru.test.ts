// Count-bounded LRU caches: the bound holds, the least recently used goes first, and nothing is
// allocated for entries not yet stored.
import t from 'tap';
import { lruOfAtMost } from '../../lib/lru.js';

t.test('at most maxEntries, the least recently used dropped first', async (t) => {
  const c = lruOfAtMost<string, number>(3);
  c.set('a', 1);
  c.set('b', 2);
  c.set('c', 3);
  c.get('a');
  c.set('d', 4);
  t.equal(c.size, 3);
  t.same([...c.keys()].sort(), ['a', 'c', 'd'], 'b, the least recently used, is gone');
});

t.test('a cache of a million entries costs nothing until it fills', async (t) => {
  const before = process.memoryUsage().heapUsed;
  const c = lruOfAtMost<number, number>(1_000_000);
  const grown = process.memoryUsage().heapUsed - before;
  // lru-cache's `max` of a million allocates two arrays of a million slots up front (16 MB).
  t.ok(grown < 1_000_000, `heap grew ${grown} bytes`);
  c.set(1, 1);
  t.equal(c.get(1), 1);
});
