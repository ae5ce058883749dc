/**
 * CSV files as people export them from spreadsheets and CRMs, read with csv-parse for every feature that
 * takes one (a batch's recipients, a suppression import): rows with the 1-based line each starts on (the
 * line an editor shows, so messages can name it), a byte order mark dropped, CR LF or LF, quoted values
 * holding separators, doubled quotes and line breaks, white space around values dropped, blank lines left
 * out. What the rows mean is each feature's business.
 */
import { CsvError, parse } from 'csv-parse/sync';

/** A fault of a CSV file that the person who sent it must fix, with its line (0: the file as a whole). */
export interface CsvProblem {
  readonly line: number;
  readonly message: string;
}

export interface CsvRow {
  /** 1-based line of the text where the row starts (a quoted value may carry it over several). */
  readonly line: number;
  /** The row's values, trimmed; rows may differ in length. */
  readonly cells: readonly string[];
}

export type CsvRead =
  | { readonly ok: true; readonly rows: readonly CsvRow[] }
  | { readonly ok: false; readonly line: number; readonly message: string };

export interface CsvOptions {
  /**
   * `detect`: of comma, semicolon (spreadsheets in many European locales) and tab, the one the first line
   * has most of, a comma when it has none (a file of one value a line). Only one separator is used per
   * file, so that the others stay plain characters of the values.
   */
  readonly separator?: ',' | 'detect';
}

/** The file's bytes as text: UTF-8 (a byte order mark is dropped), or null when they are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

function detectSeparator(firstLine: string): string {
  let best = ',';
  let bestCount = 0;
  for (const candidate of [',', ';', '\t']) {
    const count = firstLine.split(candidate).length - 1;
    if (count > bestCount) [best, bestCount] = [candidate, count];
  }
  return best;
}

const faultMessages: Partial<Record<CsvError['code'], string>> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is not closed (a " is missing)',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a quoted field has more after its closing quote',
  CSV_INVALID_CLOSING_QUOTE: 'a quoted field has more after its closing quote',
};

const isBlankRow = (cells: readonly string[]) => cells.length === 1 && cells[0] === '';

export function readCsv(text: string, options: CsvOptions = {}): CsvRead {
  // One kind of line break, so that csv-parse counts lines as an editor does (it counts CR LF inside a
  // quoted value as two); a line break inside a quoted value becomes LF.
  const normalised = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const separator = options.separator === 'detect' ? detectSeparator(normalised.split('\n', 1)[0]!) : ',';
  const rows: CsvRow[] = [];
  let lastEnd = 0;
  try {
    parse(normalised, {
      delimiter: separator,
      relax_column_count: true,
      // A quote inside an unquoted value is a character of it, as spreadsheets write it.
      relax_quotes: true,
      skip_empty_lines: true,
      trim: true,
      on_record: (record: string[], context) => {
        // `lines` is where the record ends; a quoted value may span several.
        lastEnd = context.lines;
        if (!isBlankRow(record)) {
          const breaks = record.reduce((count, cell) => count + (cell.match(/\n/g)?.length ?? 0), 0);
          rows.push({ line: context.lines - breaks, cells: record.map((cell) => cell.trim()) });
        }
        return null;
      },
    });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    // The faulty record starts on the first line with anything on it after the last record read.
    const lines = normalised.split('\n');
    let line = lastEnd + 1;
    while (line < lines.length && lines[line - 1]!.trim() === '') line++;
    const message = faultMessages[error.code] ?? error.message.replace(/^[A-Za-z ]+: /, '');
    return { ok: false, line, message };
  }
  return { ok: true, rows };
}
