// Typed errors: a hook throws a GatewayError; the core renders it once, in the client's format.
import type { WireFormat } from './config-types.js';
import { StoreError } from './store/types.js';

/** Error types of the messages format; the chat format gets a matching `type` and a `code`. */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'billing_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

export interface GatewayErrorOptions {
  param?: string | null;
  /** Seconds; sent as Retry-After (always present on 503). */
  retryAfter?: number;
  /** Extra detail kept for history and tests, never sent to the client. */
  cause?: unknown;
  /**
   * Machine-readable detail sent in a messages-format error as `error.details`, e.g.
   * `{ error_code: 'thread_not_found' }`, which the vendor's SDKs act on. Not part of the chat format.
   */
  details?: Record<string, unknown>;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly param: string | null;
  readonly retryAfter?: number;
  readonly details?: Record<string, unknown>;

  constructor(status: number, type: ErrorType, code: string, message: string, opts: GatewayErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = opts.param ?? null;
    this.retryAfter = opts.retryAfter ?? (status === 503 ? 1 : undefined);
    if (opts.details) this.details = opts.details;
  }
}

export const badRequest = (code: string, message: string, param?: string | null) =>
  new GatewayError(400, 'invalid_request_error', code, message, { param });
export const notFound = (code: string, message: string) => new GatewayError(404, 'not_found_error', code, message);
export const unavailable = (code: string, message: string, retryAfter: number) =>
  new GatewayError(503, 'overloaded_error', code, message, { retryAfter });

/**
 * Anything not a GatewayError becomes an opaque 500 (the detail goes to the log, not the client),
 * but a store whose database cannot be reached at the moment is a 503 the client may retry.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof StoreError && err.code === 'unavailable') {
    return unavailable('store_unavailable', 'The gateway cannot reach its database at the moment. Nothing was charged; retry shortly.', 5);
  }
  return new GatewayError(500, 'api_error', 'internal_error', 'The gateway hit an internal error.', { cause: err });
}

/** A failure answered 503 (the store's database away): not a fault here, the client may retry. */
export const isUnavailable = (err: unknown): boolean => toGatewayError(err).status === 503;

/**
 * OpenAI-style `type` for the chat format (OpenAI calls its own 500s `server_error` and answers an
 * unknown model or path `invalid_request_error`, the code saying which).
 */
const chatType: Record<ErrorType, string> = {
  invalid_request_error: 'invalid_request_error',
  authentication_error: 'authentication_error',
  permission_error: 'permission_error',
  not_found_error: 'invalid_request_error',
  request_too_large: 'invalid_request_error',
  billing_error: 'insufficient_quota',
  rate_limit_error: 'rate_limit_error',
  api_error: 'server_error',
  overloaded_error: 'service_unavailable',
  timeout_error: 'timeout',
};

export function errorBody(err: GatewayError, format: WireFormat): object {
  if (format === 'chat') {
    return { error: { message: err.message, type: chatType[err.type], param: err.param, code: err.code } };
  }
  const error: Record<string, unknown> = { type: err.type, message: err.message };
  if (err.details) error.details = err.details;
  return { type: 'error', error };
}

/** The error as one SSE event for a stream that already started (format's own error event). */
export function errorEvent(err: GatewayError, format: WireFormat): string {
  const data = JSON.stringify(errorBody(err, format));
  return format === 'chat' ? `data: ${data}\n\n` : `event: error\ndata: ${data}\n\n`;
}
