/**
 * The portal's Suppressions page over HTTP, on both databases: add a number (as people write it), import a
 * CSV file of them (all or nothing, each faulty line named), remove one after a confirmation; forms carry
 * the CSRF token; another account's list is out of reach; what the page adds, the API refuses to call.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient, type PortalClient } from '../support/portal-client.js';
import { getSuppressions } from '../support/suppression-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('Portal suppression list', (dialect) => {
  let t: TestApp;
  let client: PortalClient;
  before(async () => {
    t = await startTestApp(dialect);
    client = await signedInClient(t);
  });
  after(async () => t.close());
  beforeEach(async () => {
    await t.services.db.deleteFrom('suppressions').execute();
  });

  const listed = async (accountId = t.seed.accountId) =>
    (
      await t.services.db
        .selectFrom('suppressions')
        .select(['to_number', 'reason'])
        .where('account_id', '=', accountId)
        .orderBy('to_number')
        .execute()
    ).map((row) => [row.to_number, row.reason]);

  it('adds a number from the form; the API lists it and refuses to call it; the same number again changes nothing', async () => {
    const empty = await client.get('/developers/suppressions');
    assert.equal(empty.statusCode, 200);
    assert.match(empty.body, /<a href="\/developers\/suppressions" aria-current="page">Suppressions<\/a>/);
    assert.match(empty.body, /No numbers yet\./);

    const added = await client.post('/developers/suppressions', { to: ' +1 (415) 555-0180 ', reason: 'Asked <not> to be called' });
    assert.equal(added.statusCode, 303, added.body.slice(0, 300));
    assert.equal(added.headers.location, '/developers/suppressions?notice=suppression_added');
    const shown = await client.get(added.headers.location as string);
    assert.match(shown.body, /The number is on the list: it is not called any more/);
    assert.match(shown.body, /<code>\+14155550180<\/code>/);
    assert.match(shown.body, /Asked &lt;not&gt; to be called/, 'the reason is text, never markup');
    assert.match(shown.body, /One number/);

    assert.deepEqual(
      (await getSuppressions(t)).json().data.map((entry: { to: string }) => entry.to),
      ['+14155550180'],
    );
    const refused = await t.createCall(callBody(t, { to: '+14155550180' }));
    assert.equal(refused.json().error, 'number_suppressed');

    const again = await client.post('/developers/suppressions', { to: '+14155550180', reason: 'another' });
    assert.equal(again.headers.location, '/developers/suppressions?notice=suppression_exists');
    assert.deepEqual(await listed(), [['+14155550180', 'Asked <not> to be called']]);
  });

  it('refuses a malformed number or an over-long reason on the page, and a form without its CSRF token', async () => {
    const bad = await client.post('/developers/suppressions', { to: '4155550181', reason: 'x' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /Enter the number in E\.164 format/);
    assert.match(bad.body, /value="4155550181"/, 'the form keeps what was typed');
    const long = await client.post('/developers/suppressions', { to: '+14155550181', reason: 'x'.repeat(501) });
    assert.equal(long.statusCode, 400);
    assert.match(long.body, /A reason has at most 500 characters\./);
    const forged = await client.post('/developers/suppressions', { to: '+14155550181' }, { csrf: 'forged' });
    assert.equal(forged.statusCode, 403);
    const forgedImport = await client.post('/developers/suppressions/import', { csv: '+14155550181' }, { csrf: null });
    assert.equal(forgedImport.statusCode, 403);
    assert.deepEqual(await listed(), []);
  });

  it('imports a CSV with a to column and reasons; repeated and already listed numbers are counted, not doubled', async () => {
    await client.post('/developers/suppressions', { to: '+14155550190' });
    const csv = [
      'name,to,reason',
      'Ada,+14155550190,already there',
      '"Lovelace, Ada",+1 415 555 0191,"Said ""stop"", twice"',
      '',
      'Grace,+14155550192,',
      'Grace again,+14155550192,',
    ].join('\r\n');
    const imported = await client.post('/developers/suppressions/import', { csv, reason: 'CRM export' });
    assert.equal(imported.statusCode, 200, imported.body.slice(0, 400));
    assert.match(imported.body, /Imported: 2 numbers added, 1 already on the list, 1 repeated line counted once\./);
    assert.match(imported.body, /data-replace-url="\/developers\/suppressions"/);
    assert.deepEqual(await listed(), [
      ['+14155550190', null],
      ['+14155550191', 'Said "stop", twice'],
      ['+14155550192', 'CRM export'],
    ]);

    // One number per line, and a semicolon-separated file with a phone column.
    const lines = await client.post('/developers/suppressions/import', { csv: '+14155550193\n\n+14155550194\n', reason: '' });
    assert.match(lines.body, /Imported: 2 numbers added\./);
    const semicolons = await client.post('/developers/suppressions/import', { csv: 'Phone;Reason\n+14155550195;opted out', reason: '' });
    assert.match(semicolons.body, /Imported: 1 number added\./);
    assert.equal((await listed()).length, 6);
  });

  it('imports nothing when a line is wrong, and names every faulty line', async () => {
    await client.post('/developers/suppressions', { to: '+14155550200' });
    const csv = ['to', '+14155550201', '4155550202', '+14155550203', 'call me maybe', ',', '+14155550204'].join('\n');
    const refused = await client.post('/developers/suppressions/import', { csv, reason: '' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /Nothing was imported: 3 lines need fixing\./);
    assert.match(refused.body, /<strong>Line 3<\/strong> &quot;4155550202&quot; is not a phone number in E\.164 format/);
    assert.match(refused.body, /<strong>Line 5<\/strong> &quot;call me maybe&quot; is not a phone number/);
    assert.match(refused.body, /<strong>Line 6<\/strong> has no number\./);
    assert.ok(refused.body.includes('+14155550201\n4155550202'), 'the text is kept to be fixed');
    assert.deepEqual(await listed(), [['+14155550200', null]]);

    const severalFields = await client.post('/developers/suppressions/import', { csv: '+14155550201,x\n+14155550202', reason: '' });
    assert.equal(severalFields.statusCode, 400);
    assert.match(severalFields.body, /<strong>Line 1<\/strong> has several fields: give the file a header row/);
    const unclosed = await client.post('/developers/suppressions/import', { csv: 'to\n"+14155550201', reason: '' });
    assert.match(unclosed.body, /<strong>Line 2<\/strong> a quoted field is not closed/);
    const blank = await client.post('/developers/suppressions/import', { csv: '\n \n', reason: '' });
    assert.match(blank.body, /The file has no numbers\./);
    assert.deepEqual(await listed(), [['+14155550200', null]]);
  });

  it('imports a file larger than the other forms (5,000 numbers) and pages the list; over 1 MB is refused', async () => {
    const numbers = Array.from({ length: 5_000 }, (_, index) => `+1646555${String(index).padStart(4, '0')}`);
    const imported = await client.post('/developers/suppressions/import', { csv: numbers.join('\n'), reason: 'bulk' });
    assert.equal(imported.statusCode, 200, imported.body.slice(0, 300));
    assert.match(imported.body, /Imported: 5000 numbers added\./);
    assert.match(imported.body, /5000 numbers/);
    const first = await client.get('/developers/suppressions');
    assert.equal((first.body.match(/Remove…/g) ?? []).length, 50);
    const older = /href="(\/developers\/suppressions\?starting_after=sup_\w+)">Older numbers/.exec(first.body)?.[1];
    assert.ok(older, 'a link to older numbers');
    const second = await client.get(older);
    assert.equal((second.body.match(/Remove…/g) ?? []).length, 50);
    assert.match(second.body, /← Newest/);

    const huge = await client.post('/developers/suppressions/import', { csv: '+14155550123\n'.repeat(80_000), reason: '' });
    assert.equal(huge.statusCode, 413);
    assert.match(huge.body, /The form is larger than 1024 KB\./);
  });

  it('removes a number after a confirmation; another account reaches neither its entries nor its removal', async () => {
    await client.post('/developers/suppressions', { to: '+14155550210', reason: 'opted out' });
    const page = await client.get('/developers/suppressions');
    assert.match(page.body, /href="\/developers\/suppressions\/remove\?to=%2B14155550210"/);
    const confirm = await client.get('/developers/suppressions/remove?to=%2B14155550210');
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Once removed, the number may be called again/);
    assert.match(confirm.body, /<input type="hidden" name="to" value="\+14155550210">/);

    const other = await t.newAccount({ agentId: 'agent_portal_other' });
    const otherClient = await signedInClient(t, other);
    assert.doesNotMatch((await otherClient.get('/developers/suppressions')).body, /14155550210/);
    assert.equal((await otherClient.get('/developers/suppressions/remove?to=%2B14155550210')).statusCode, 404);
    assert.equal((await otherClient.post('/developers/suppressions/remove', { to: '+14155550210' })).statusCode, 404);
    assert.equal((await listed()).length, 1);

    const removed = await client.post('/developers/suppressions/remove', { to: '+14155550210' });
    assert.equal(removed.statusCode, 303);
    assert.equal(removed.headers.location, '/developers/suppressions?notice=suppression_removed');
    assert.deepEqual(await listed(), []);
    assert.equal((await client.post('/developers/suppressions/remove', { to: '+14155550210' })).statusCode, 404);
    assert.equal((await client.get('/developers/suppressions/remove?to=%2B14155550210')).statusCode, 404);
    assert.equal((await t.createCall(callBody(t, { to: '+14155550210' }))).statusCode, 201);
  });
});
