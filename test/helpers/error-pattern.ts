// An object pattern for t.rejects / t.throws. tap compares the thrown error to it with t.match, which
// takes any object, but tap's ErrorMatch type only admits patterns with a message, name, code, cause
// or errors key. Unlike `Object.assign(new Error(), fields)`, this adds no check: the error need not be
// an Error instance nor have a name containing "Error".
import type { ErrorMatch } from '@tapjs/asserts';

/** `await t.rejects(p, errorWith({ status: 404 }))` checks exactly `t.match(error, { status: 404 })`. */
export function errorWith(fields: Record<string, unknown>): ErrorMatch {
  return fields as ErrorMatch;
}
