// LRU caches bounded by their number of entries that allocate as they fill. lru-cache's `max`
// allocates its arrays for every entry up front: with it, the rate-limit windows (100,000 keys), the
// auth lookups, the finished requests and the dashboard's two attempt limiters (bounded by size
// alone now) held 3.5 MB of heap and 3.7 MB of RSS before their first entry, arrays of `undefined`
// that every mark-compact scans. Counted through `maxSize` instead, measured in a loop: a read costs
// the same (~10 ns), a write about 10 ns more.
import { LRUCache } from 'lru-cache';

export function lruOfAtMost<K extends {}, V extends {}>(maxEntries: number): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: maxEntries, sizeCalculation: () => 1 });
}
