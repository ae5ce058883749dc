/** The shared CSV reader (src/lib/csv.ts) both imports use; no database needed. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { readCsv } from '../../src/lib/csv.js';

it('gives each row the line it starts on, CR LF inside a quoted value too', () => {
  assert.deepEqual(readCsv('\uFEFFto,reason\r\n+1,"a\r\nb"\r\n\r\n  \r\n+2,c'), {
    ok: true,
    rows: [
      { line: 1, cells: ['to', 'reason'] },
      { line: 2, cells: ['+1', 'a\nb'] },
      { line: 6, cells: ['+2', 'c'] },
    ],
  });
});

it('names the line where an unclosed quoted value starts', () => {
  assert.deepEqual(readCsv('to\n+1,"a\nb"\n\n"+2\n'), { ok: false, line: 5, message: 'a quoted field is not closed (a " is missing)' });
});

it('uses the separator the first line has most of when asked to detect it, and only that one', () => {
  assert.deepEqual(readCsv('a;b\n 1 ; "x;y" \n', { separator: 'detect' }), {
    ok: true,
    rows: [
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['1', 'x;y'] },
    ],
  });
  assert.deepEqual(readCsv('a\n"x" y'), { ok: false, line: 2, message: 'a quoted field has more after its closing quote' });
  assert.deepEqual(readCsv('a;b,c'), { ok: true, rows: [{ line: 1, cells: ['a;b', 'c'] }] });
});
