/**
 * A batch's recipients from a CSV file (the portal's upload): a `to` or `phone` column, an optional
 * `reference` column, every other column a metadata variable (as text). Every line is checked with the
 * rules of POST /v1/batches and every fault is reported with its line, so a file is fixed in one go;
 * a file with any fault gives no recipients at all.
 */
import { readCsv, type CsvProblem } from '../../lib/csv.js';
import { isE164 } from '../../lib/phone-numbers.js';
import { metadataKeyMaxLength } from '../calls/calls.schemas.js';
import { metadataSizeProblem } from '../calls/calls.service.js';
import { recipientsMax, referenceMaxLength, type CreateBatchBody } from './batches.schemas.js';

export type RecipientsCsvResult =
  | { readonly kind: 'ok'; readonly recipients: CreateBatchBody['recipients'] }
  | { readonly kind: 'invalid'; readonly problems: readonly CsvProblem[] };

const toColumns = ['to', 'phone'];

export function parseRecipientsCsv(text: string): RecipientsCsvResult {
  // Semicolons and tabs too: spreadsheets in many European locales export CSV with semicolons.
  const read = readCsv(text, { separator: 'detect' });
  if (!read.ok)
    return { kind: 'invalid', problems: [{ line: read.line, message: `${read.message}; the file could not be read from here on.` }] };
  // A line of empty values (only separators) is left out as a blank one.
  const [header, ...records] = read.rows.filter((row) => row.cells.some((cell) => cell !== ''));
  if (!header) return { kind: 'invalid', problems: [{ line: 0, message: 'the file is empty: it needs a header line with a to column.' }] };

  const problems: CsvProblem[] = [];
  const headerProblem = (message: string) => problems.push({ line: header.line, message });
  const names = header.cells;
  const lowered = names.map((name) => name.toLowerCase());
  const toIndexes = lowered.flatMap((name, index) => (toColumns.includes(name) ? [index] : []));
  const referenceIndexes = lowered.flatMap((name, index) => (name === 'reference' ? [index] : []));
  if (toIndexes.length === 0) headerProblem('the header has no to (or phone) column.');
  if (toIndexes.length > 1) headerProblem('the header has more than one to or phone column; keep one.');
  if (referenceIndexes.length > 1) headerProblem('the header has more than one reference column; keep one.');
  const toIndex = toIndexes[0];
  const referenceIndex = referenceIndexes[0];
  const seen = new Set<string>();
  names.forEach((name, index) => {
    if (index === toIndex || index === referenceIndex) return;
    if (name === '') headerProblem(`column ${index + 1} has no name; every column other than to and reference is a metadata key.`);
    else if (name.length > metadataKeyMaxLength) {
      headerProblem(`the column name ${name.slice(0, 80)}… is a metadata key, and keys have at most ${metadataKeyMaxLength} characters.`);
    } else if (seen.has(name)) headerProblem(`the column ${name} appears twice.`);
    seen.add(name);
  });

  if (records.length === 0) problems.push({ line: 0, message: 'the file has no recipients: add a line per number under the header.' });
  if (records.length > recipientsMax) {
    problems.push({
      line: 0,
      message: `the file has ${records.length.toLocaleString('en')} recipients; a batch has at most ${recipientsMax.toLocaleString('en')}.`,
    });
  }

  const firstLineOf = new Map<string, number>();
  const recipients: CreateBatchBody['recipients'] = [];
  for (const { cells, line } of records) {
    const fault = (message: string) => problems.push({ line, message });
    if (cells.length !== names.length) {
      fault(`it has ${cells.length} values and the header ${names.length} columns.`);
      continue;
    }
    if (toIndex === undefined) continue;
    const to = cells[toIndex]!;
    if (to === '') fault(`the ${names[toIndex]} column is empty.`);
    else if (!isE164(to)) fault(`${to.slice(0, 40)} is not a phone number in E.164 format, such as +14155550123.`);
    else {
      const earlier = firstLineOf.get(to);
      if (earlier !== undefined) fault(`${to} is already on line ${earlier}; a number appears at most once in a batch.`);
      else firstLineOf.set(to, line);
    }
    const reference = referenceIndex === undefined ? '' : cells[referenceIndex]!;
    if (reference.length > referenceMaxLength) fault(`the reference has ${reference.length} characters; at most ${referenceMaxLength}.`);
    const metadata: Record<string, string> = {};
    names.forEach((name, index) => {
      if (index !== toIndex && index !== referenceIndex) metadata[name] = cells[index]!;
    });
    const hasMetadata = Object.keys(metadata).length > 0;
    const sizeProblem = hasMetadata ? metadataSizeProblem(metadata) : null;
    if (sizeProblem) fault(`its ${sizeProblem.replace(/^metadata/, 'metadata (the columns other than to and reference)')}`);
    recipients.push({ to, ...(reference === '' ? {} : { reference }), ...(hasMetadata ? { metadata } : {}) });
  }
  problems.sort((a, b) => a.line - b.line);
  return problems.length > 0 ? { kind: 'invalid', problems } : { kind: 'ok', recipients };
}
