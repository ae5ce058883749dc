import { type RawBuilder, sql, type SqlBool } from 'kysely';

/** Where a page of a newest-first list (by created_at, then id) stopped: the last row it showed. */
export interface ListCursor {
  readonly createdAt: string;
  readonly id: string;
}

/**
 * The rows after `cursor` in a newest-first list by created_at, then id (the lists' one order). The bound on
 * created_at lets the index seek to the cursor: the OR alone is tested row by row from the newest, so a page
 * would cost as much as all the pages before it.
 */
export function olderThan(cursor: ListCursor): RawBuilder<SqlBool> {
  const createdAt = sql.ref('created_at');
  const id = sql.ref('id');
  return sql<SqlBool>`${createdAt} <= ${cursor.createdAt} and (${createdAt} < ${cursor.createdAt} or (${createdAt} = ${cursor.createdAt} and ${id} < ${cursor.id}))`;
}

/** The rows after `cursor` in an oldest-first walk by created_at, then id (retention): `olderThan` reversed. */
export function newerThan(cursor: ListCursor): RawBuilder<SqlBool> {
  const createdAt = sql.ref('created_at');
  const id = sql.ref('id');
  return sql<SqlBool>`${createdAt} >= ${cursor.createdAt} and (${createdAt} > ${cursor.createdAt} or (${createdAt} = ${cursor.createdAt} and ${id} > ${cursor.id}))`;
}
