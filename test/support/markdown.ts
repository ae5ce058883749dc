/** Reading the docs' Markdown as GitHub shows it: its prose, and the anchors of its headings. */

/** The page without its fenced code blocks, whose lines are neither headings nor links. */
export function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2, …. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = match[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}
