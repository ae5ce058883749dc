"""Cursor pages as every list of the API answers them: ``{data, has_more}``, the next ``starting_after`` the last id."""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, List, Optional, TypeVar

T = TypeVar("T")

__all__ = ["Page", "PageIterator"]


class Page(Generic[T]):
    """One page of a list: ``data`` (newest first) and ``has_more``."""

    __slots__ = ("data", "has_more")

    def __init__(self, data: List[T], has_more: bool) -> None:
        self.data = data
        self.has_more = has_more

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"Page(data=<{len(self.data)} items>, has_more={self.has_more})"

    @classmethod
    def of(cls, body: Any) -> Page[Any]:
        return cls(list(body.get("data") or []), bool(body.get("has_more")))


class PageIterator(Iterator[T]):
    """Every item of a list, page after page, each page fetched when the loop reaches it (one request, with
    the client's retries): ``for call in client.list_calls(status="failed")``. Breaking out fetches no more.
    ``pages()`` walks the pages themselves; ``to_list()`` collects the items."""

    def __init__(self, fetch_page: Callable[[Optional[str]], Page[T]], starting_after: Optional[str] = None) -> None:
        self._fetch_page = fetch_page
        self._starting_after = starting_after
        self._items: Optional[Iterator[T]] = None

    def pages(self) -> Iterator[Page[T]]:
        """The pages, from the first (or the one after ``starting_after``), each fetched as it is reached."""
        cursor = self._starting_after
        while True:
            page = self._fetch_page(cursor)
            yield page
            # An empty page with has_more would ask for the same page for ever; the API never sends one.
            if not page.has_more or not page.data:
                return
            last = page.data[-1]
            cursor = last["id"] if isinstance(last, dict) else getattr(last, "id")  # noqa: B009

    def _all(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.data

    def __iter__(self) -> PageIterator[T]:
        return self

    def __next__(self) -> T:
        if self._items is None:
            self._items = self._all()
        return next(self._items)

    def to_list(self, max_items: int = 10_000) -> List[T]:
        """The remaining items in a list, at most ``max_items``, so that a forgotten filter cannot fill memory."""
        items: List[T] = []
        for item in self:
            items.append(item)
            if len(items) >= max_items:
                break
        return items
