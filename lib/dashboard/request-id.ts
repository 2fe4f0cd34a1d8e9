// What a person types to find a request: the id from an x-request-id header, in any case, with or
// without its `req_` prefix, whole or only its start. Ids are `req_` and a ULID (Crockford base 32).

/** The start of the stored ids `text` stands for, or null when it cannot be the start of an id. */
export function requestIdPrefix(text: string): string | null {
  // Crockford's decoding reads I and L as 1 and O as 0; a ULID never starts with R (its time part).
  const body = text.trim().toUpperCase().replace(/^REQ_?/, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  return /^[0-9A-HJKMNP-TV-Z]{1,26}$/.test(body) ? `req_${body}` : null;
}
