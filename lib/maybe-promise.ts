// A value now, or a promise of it: what the store's per-request calls return. The embedded SQLite
// store answers at once; a networked store returns promises. `andThen` keeps the first case free of
// promises and microtask hops, which on the hot path cost more than the work itself.
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** `fn(v)` at once when `v` is a value; once it resolves when it is a promise. */
export function andThen<T, R>(v: MaybePromise<T>, fn: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return isPromise(v) ? v.then(fn) : fn(v);
}
