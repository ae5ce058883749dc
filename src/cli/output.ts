/** Human-readable rendering helpers; JSON output needs none (main.ts serialises the result as it is). */

/** Left-aligned columns separated by two spaces, with an upper-case header row. */
export function formatTable(headers: readonly string[], rows: readonly (readonly (string | null)[])[]): string {
  const cells = [headers.map((header) => header.toUpperCase()), ...rows.map((row) => row.map((cell) => cell ?? '-'))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells
    .map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  '))
    .join('\n');
}

/** `key: value` lines with the values aligned, for one record. */
export function formatFields(fields: readonly (readonly [string, string | null])[]): string {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields.map(([label, value]) => `  ${`${label}:`.padEnd(width)} ${value ?? '-'}`).join('\n');
}
