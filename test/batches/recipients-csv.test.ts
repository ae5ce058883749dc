/** The portal's CSV of a batch's recipients: the separators spreadsheets export, read like the comma's. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRecipientsCsv } from '../../src/features/batches/recipients-csv.js';

describe('recipients from a CSV file', () => {
  for (const [name, separator] of [
    ['commas', ','],
    ['semicolons', ';'],
    ['tabs', '\t'],
  ] as const) {
    it(`reads a file separated by ${name}`, () => {
      const text = `${['Phone', 'reference', 'first_name'].join(separator)}\n${['+14155550123', 'r-1', 'Ada'].join(separator)}\n`;
      const result = parseRecipientsCsv(text);
      assert.deepEqual(result, { kind: 'ok', recipients: [{ to: '+14155550123', reference: 'r-1', metadata: { first_name: 'Ada' } }] });
    });
  }
});
