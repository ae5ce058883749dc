/**
 * The one way pages make HTML, the portal's and the API reference's (features/openapi/docs.view.ts):
 * `html\`...\`` escapes every interpolated value unless it is already `SafeHtml` (the result of another
 * `html\`\`` or an explicit `raw()`), so a user's name, URL, metadata or a webhook receiver's answer can
 * only ever appear as text. Arrays are rendered item by item; null, undefined and false render as nothing,
 * so `${cond && html\`…\`}` works. It is no feature's, so both may import it from here.
 */

export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const replacements: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe for element content and for quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => replacements[char] ?? char);
}

/** Marks trusted markup (ours, never a user's) as HTML. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}
