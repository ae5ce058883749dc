/**
 * Reads a list of numbers to suppress, as people export it from a spreadsheet or a CRM: a CSV with a `to`
 * or `phone` column (and an optional `reason` column), or one number per line. RFC 4180 quoting is
 * understood (a quoted field may hold commas, quotes doubled, line breaks). Only the shape is read here;
 * the service judges each number.
 */

export interface ImportLine {
  /** 1-based line of the text where the row starts, for the messages people read. */
  readonly line: number;
  readonly to: string;
  readonly reason?: string;
}

export type ParsedImport =
  | { readonly ok: true; readonly rows: readonly ImportLine[] }
  | { readonly ok: false; readonly line: number; readonly message: string };

/**
 * The separator of the file: of comma, semicolon (spreadsheets in many European locales) and tab, the one
 * its first line has most of; a comma when it has none (one number per line).
 */
function separatorOf(text: string): string {
  const firstLine = text.split(/\r?\n/, 1)[0] ?? '';
  let best = ',';
  let bestCount = 0;
  for (const candidate of [',', ';', '\t']) {
    const count = firstLine.split(candidate).length - 1;
    if (count > bestCount) [best, bestCount] = [candidate, count];
  }
  return best;
}

/** Splits CSV text into rows of fields, each with the line it starts on; blank lines are left out. */
function csvRows(text: string): { line: number; fields: string[] }[] | { line: number; message: string } {
  const separator = separatorOf(text);
  const rows: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  const endRow = () => {
    fields.push(field);
    if (fields.length > 1 || fields[0]!.trim() !== '') rows.push({ line: rowLine, fields });
    fields = [];
    field = '';
  };
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else {
        if (char === '\n') line++;
        field += char;
      }
    } else if (char === '"' && field.trim() === '') {
      field = '';
      quoted = true;
    } else if (char === separator) {
      fields.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i++;
      endRow();
      line++;
      rowLine = line;
    } else field += char;
  }
  if (quoted) return { line: rowLine, message: 'a quoted field is not closed (a " is missing)' };
  endRow();
  return rows;
}

const numberHeaders = ['to', 'phone'];

/**
 * The numbers of an import, each with its line. A first row that names a `to` or `phone` column is a
 * header; otherwise every line is one number alone (a line with several fields then needs the header).
 */
export function parseImport(text: string): ParsedImport {
  const parsed = csvRows(text.replace(/^\uFEFF/, ''));
  if (!Array.isArray(parsed)) return { ok: false, ...parsed };
  if (parsed.length === 0) return { ok: true, rows: [] };
  const header = parsed[0]!.fields.map((name) => name.trim().toLowerCase());
  const toColumn = header.findIndex((name) => numberHeaders.includes(name));
  if (toColumn === -1) {
    const rows: ImportLine[] = [];
    for (const { line, fields } of parsed) {
      if (fields.length > 1) {
        return {
          ok: false,
          line,
          message: 'has several fields: give the file a header row naming the column of the numbers ("to" or "phone")',
        };
      }
      rows.push({ line, to: fields[0]!.trim() });
    }
    return { ok: true, rows };
  }
  const reasonColumn = header.indexOf('reason');
  return {
    ok: true,
    rows: parsed.slice(1).map(({ line, fields }) => {
      const reason = reasonColumn === -1 ? '' : (fields[reasonColumn] ?? '').trim();
      return { line, to: (fields[toColumn] ?? '').trim(), ...(reason === '' ? {} : { reason }) };
    }),
  };
}
