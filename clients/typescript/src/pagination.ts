/** Cursor pages as every list of the API answers them: `{data, has_more}`, the next one `starting_after` the last id. */

export interface Page<T> {
  readonly data: T[];
  readonly has_more: boolean;
}

/**
 * Every item of a list, page after page, fetched as the loop asks: `for await (const call of
 * client.calls.list())`. `pages()` walks the pages themselves. Each page is one request (with the client's
 * retries); breaking out of the loop fetches no more.
 */
export class PageIterator<T extends { readonly id: string }> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (startingAfter: string | undefined) => Promise<Page<T>>,
    private readonly startingAfter: string | undefined = undefined,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startingAfter;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield page;
      const last = page.data.at(-1);
      // An empty page with has_more would loop for ever on the same cursor; the API never sends one.
      if (!page.has_more || last === undefined) return;
      cursor = last.id;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item into an array, at most `max` of them (default 10,000), so a forgotten filter cannot fill memory. */
  async toArray(max = 10_000): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) {
      if (items.length >= max) break;
      items.push(item);
    }
    return items;
  }
}
