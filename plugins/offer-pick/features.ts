// Which optional capabilities a request uses, so offers lacking them can be skipped.
import type { WireFormat } from '../../lib/config-types.js';
import type { Feature } from '../../lib/context.js';

export const FEATURE_NAMES: Record<Feature, string> = {
  tools: 'tools',
  images: 'image input',
  reasoning: 'reasoning (reasoning_effort / thinking)',
  json_schema: 'structured output (json_schema)',
};

function hasImage(content: unknown): boolean {
  if (!Array.isArray(content)) return false;
  for (const part of content) {
    if (!part || typeof part !== 'object') continue;
    if (part.type === 'image_url' || part.type === 'image') return true;
    if (part.type === 'tool_result' && hasImage(part.content)) return true;
  }
  return false;
}

export function detectFeatures(body: Record<string, any>, format: WireFormat): Set<Feature> {
  const used = new Set<Feature>();
  if (Array.isArray(body.tools) && body.tools.length > 0) used.add('tools');
  if (Array.isArray(body.messages) && body.messages.some((m: any) => m && hasImage(m.content))) used.add('images');
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
