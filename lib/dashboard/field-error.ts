// A form's error shown at the field it is about: the input says it is invalid (aria-invalid) and
// names its message (aria-describedby), which sits right under it; the page's banner only says
// that something below needs fixing.
import { html, type Html } from './html.js';
import type { Notice } from './layout.js';

export interface FieldError {
  /** The input's name. */
  field: string;
  text: string;
}

const messageId = (field: string) => `${field.replace(/[^A-Za-z0-9_-]/g, '-')}-error`;

/** The attributes of the input named `field`: nothing unless `error` is about it (then it has the focus, without script). */
export const invalidAttrs = (error: FieldError | undefined, field: string): Html | '' =>
  error?.field === field ? html` aria-invalid="true" aria-describedby="${messageId(field)}" autofocus` : '';

/** The message under the input named `field`, when `error` is about it. */
export const fieldMessage = (error: FieldError | undefined, field: string): Html | '' =>
  error?.field === field ? html`<span class="field-error" id="${messageId(field)}">${error.text}</span>` : '';

/** The banner of a form refused for a field's sake. */
export const notSaved = (what: string): Notice => ({ kind: 'error', text: `${what} Check the field marked below.` });
