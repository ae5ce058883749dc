/** The shapes of an import file the suppression list reads (suppressions-csv.ts); no database needed. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { parseImport } from '../../src/features/suppressions/suppressions-csv.js';

it('reads a header with a to or phone column (any case, any place) and an optional reason column', () => {
  assert.deepEqual(parseImport('\uFEFFName,PHONE,Reason\r\nAda,+14155550100,opted out\r\nGrace,+14155550101,\r\n'), {
    ok: true,
    rows: [
      { line: 2, to: '+14155550100', reason: 'opted out' },
      { line: 3, to: '+14155550101' },
    ],
  });
  assert.deepEqual(parseImport('to\t reason \n+14155550100\tvia\tSMS'), {
    ok: true,
    rows: [{ line: 2, to: '+14155550100', reason: 'via' }],
  });
});

it('counts lines as people see them: blank lines skipped, a quoted line break inside its row', () => {
  assert.deepEqual(parseImport('to,reason\n\n"+14155550100","first\nsecond"\n+14155550101,x'), {
    ok: true,
    rows: [
      { line: 3, to: '+14155550100', reason: 'first\nsecond' },
      { line: 5, to: '+14155550101', reason: 'x' },
    ],
  });
});

it('reads one number per line without a header, and refuses several fields without one', () => {
  assert.deepEqual(parseImport(' +14155550100 \n+14155550101'), {
    ok: true,
    rows: [
      { line: 1, to: '+14155550100' },
      { line: 2, to: '+14155550101' },
    ],
  });
  const refused = parseImport('+14155550100\n+14155550101,extra');
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.line, 2);
  assert.deepEqual(parseImport(''), { ok: true, rows: [] });
  assert.deepEqual(parseImport('to,reason\n"+1415'), { ok: false, line: 2, message: 'a quoted field is not closed (a " is missing)' });
});
