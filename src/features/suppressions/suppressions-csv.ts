/**
 * Reads a list of numbers to suppress, as people export it from a spreadsheet or a CRM: a CSV with a `to`
 * or `phone` column (and an optional `reason` column), separated by commas, semicolons or tabs, or one
 * number per line (src/lib/csv.ts reads the file). Only the shape is read here; the service judges each
 * number.
 */
import { readCsv } from '../../lib/csv.js';

export interface ImportLine {
  /** 1-based line of the text where the row starts, for the messages people read. */
  readonly line: number;
  readonly to: string;
  readonly reason?: string;
}

export type ParsedImport =
  | { readonly ok: true; readonly rows: readonly ImportLine[] }
  | { readonly ok: false; readonly line: number; readonly message: string };

const numberHeaders = ['to', 'phone'];

/**
 * The numbers of an import, each with its line. A first row that names a `to` or `phone` column is a
 * header; otherwise every line is one number alone (a line with several fields then needs the header).
 */
export function parseImport(text: string): ParsedImport {
  const read = readCsv(text, { separator: 'detect' });
  if (!read.ok) return read;
  const [first, ...rest] = read.rows;
  if (!first) return { ok: true, rows: [] };
  const header = first.cells.map((name) => name.toLowerCase());
  const toColumn = header.findIndex((name) => numberHeaders.includes(name));
  if (toColumn === -1) {
    const rows: ImportLine[] = [];
    for (const { line, cells } of read.rows) {
      if (cells.length > 1) {
        return {
          ok: false,
          line,
          message: 'has several fields: give the file a header row naming the column of the numbers ("to" or "phone")',
        };
      }
      rows.push({ line, to: cells[0]! });
    }
    return { ok: true, rows };
  }
  const reasonColumn = header.indexOf('reason');
  return {
    ok: true,
    rows: rest.map(({ line, cells }) => {
      const reason = reasonColumn === -1 ? '' : (cells[reasonColumn] ?? '');
      return { line, to: cells[toColumn] ?? '', ...(reason === '' ? {} : { reason }) };
    }),
  };
}
