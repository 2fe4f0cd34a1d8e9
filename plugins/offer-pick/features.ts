// Which optional capabilities a request uses, so offers lacking them can be skipped, and which of its
// parts only an upstream of the client's own format can take.
import type { WireFormat } from '../../lib/config-types.js';
import type { Feature } from '../../lib/context.js';
import { parseDataUrl, PDF_MEDIA_TYPE, PORTABLE_DOCUMENT_TYPES } from '../../lib/documents.js';

export const FEATURE_NAMES: Record<Feature, string> = {
  tools: 'tools',
  images: 'image input',
  reasoning: 'reasoning (reasoning_effort / thinking)',
  json_schema: 'structured output (json_schema)',
  documents: 'document input (PDF and text documents, file parts)',
};

/** A part of the request that the other format has no way to express. */
export interface FormatBound {
  /** Its field, e.g. `messages[0].content[1].source`. */
  param: string;
  /** What it is, for the error message. */
  what: string;
}

/** Where a request carries images and documents (the first of each), and its first format-bound part. */
export interface MediaUse {
  image?: string;
  document?: string;
  formatBound?: FormatBound;
}

/**
 * One walk over the message contents, tool results' contents and documents' blocks. A document from a
 * URL or an uploaded file (a vendor's own file id) cannot be converted: the chat format's file part
 * carries only inline data, and file ids mean nothing to the other vendor.
 */
export function findMedia(body: Record<string, any>): MediaUse {
  const use: MediaUse = {};
  const bound = (param: string, what: string) => {
    use.formatBound ??= { param, what };
  };
  const visit = (content: unknown, at: string, nested: number): void => {
    if (!Array.isArray(content)) return;
    content.forEach((part, k) => {
      if (!part || typeof part !== 'object') return;
      const p = `${at}[${k}]`;
      switch (part.type) {
        case 'image_url':
          use.image ??= p;
          break;
        case 'image':
          use.image ??= p;
          if (part.source?.type === 'file') bound(`${p}.source`, 'an image given by file id');
          break;
        case 'document': {
          use.document ??= p;
          const source = part.source;
          if (source?.type === 'url') bound(`${p}.source`, 'a document given by URL');
          else if (source?.type === 'file') bound(`${p}.source`, 'a document given by file id');
          else if (source?.type === 'base64' && source.media_type !== PDF_MEDIA_TYPE) bound(`${p}.source.media_type`, `a document of type ${JSON.stringify(source.media_type)}`);
          else if (source?.type === 'content' && nested > 0) visit(source.content, `${p}.source.content`, nested - 1);
          break;
        }
        case 'file': {
          use.document ??= p;
          const file = part.file;
          if (typeof file?.file_data !== 'string') bound(`${p}.file`, 'a file given by file id');
          else {
            const url = parseDataUrl(file.file_data);
            if (!url?.base64) bound(`${p}.file.file_data`, 'a file whose file_data is not a base64 data URL');
            else if (!PORTABLE_DOCUMENT_TYPES.has(url.mediaType)) bound(`${p}.file.file_data`, `a file of type ${JSON.stringify(url.mediaType)}`);
          }
          break;
        }
        case 'tool_result':
          if (nested > 0) visit(part.content, `${p}.content`, nested - 1);
          break;
      }
    });
  };
  if (Array.isArray(body.messages)) body.messages.forEach((m: any, i: number) => visit(m?.content, `messages[${i}].content`, 2));
  return use;
}

export function detectFeatures(body: Record<string, any>, format: WireFormat, media: MediaUse = findMedia(body)): Set<Feature> {
  const used = new Set<Feature>();
  if (Array.isArray(body.tools) && body.tools.length > 0) used.add('tools');
  if (media.image) used.add('images');
  if (media.document) used.add('documents');
  if (format === 'chat') {
    if (typeof body.reasoning_effort === 'string' && body.reasoning_effort !== 'none') used.add('reasoning');
    if (body.response_format?.type === 'json_schema') used.add('json_schema');
  } else {
    const t = body.thinking?.type;
    if (t === 'enabled' || t === 'adaptive') used.add('reasoning');
    if (body.output_config?.format !== undefined) used.add('json_schema');
  }
  return used;
}
