"""Pages of the lists that grow (runs, benchmarks, series, points, alerts): ``?page=&limit=``.

Every list view and API reads :func:`requested` and answers one page: ``page`` counts from 1,
``limit`` is the page size (default :data:`DEFAULT_LIMIT`, cut to :data:`MAX_LIMIT`); a value
that is not a whole number from 1 (or a page over :data:`MAX_PAGE`) is a 400 naming the
parameter. A page is read with one row more than it shows (``limit + 1``), so whether another
follows is known without counting. HTML pages link to the
previous and next page; JSON answers carry ``{"page", "limit", "next", "previous"}`` where
``next``/``previous`` are URLs (null at either end), the same query with ``page`` changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, TypeVar
from urllib.parse import urlencode

from flask import abort, jsonify, make_response, request

#: Rows per page unless ``?limit=`` says otherwise, and the most a page may hold.
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
#: The highest page number accepted (pages are read with OFFSET: bounded work per request).
MAX_PAGE = 10_000

T = TypeVar("T")


class PagingError(ValueError):
    """A ``page``/``limit`` query parameter that is not a number in range (answer 400)."""


@dataclass(frozen=True)
class Page:
    """Page ``number`` (1-based) of ``limit`` rows: rows ``offset`` .. ``offset + limit - 1``."""

    number: int = 1
    limit: int = DEFAULT_LIMIT

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.limit

    def cut(self, rows: Sequence[T]) -> tuple[list[T], bool]:
        """``rows`` read from :attr:`offset` with ``limit + 1`` → (this page's rows, another follows?)."""
        return list(rows[:self.limit]), len(rows) > self.limit

    def slice(self, rows: Sequence[T]) -> tuple[list[T], bool]:
        """This page of a list already in memory → (its rows, another follows?)."""
        return self.cut(rows[self.offset:self.offset + self.limit + 1])


def _number(args: Mapping[str, str], name: str, default: int) -> int:
    raw = args.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9) or int(raw) < 1:
        raise PagingError(f"?{name}= must be a whole number from 1")
    return int(raw)


def parse(args: Mapping[str, str], default_limit: int = DEFAULT_LIMIT) -> Page:
    """The :class:`Page` that query arguments ask for; a ``limit`` over :data:`MAX_LIMIT` is
    cut to it (as GitHub's ``per_page``).

    Raises:
        PagingError: ``page`` or ``limit`` is not a whole number from 1, or ``page`` is over
            :data:`MAX_PAGE`.
    """
    number = _number(args, "page", 1)
    if number > MAX_PAGE:
        raise PagingError(f"?page= must be at most {MAX_PAGE}")
    return Page(number=number, limit=min(_number(args, "limit", default_limit), MAX_LIMIT))


def requested(*, api: bool, default_limit: int = DEFAULT_LIMIT) -> Page:
    """The page the current request asks for; a bad value ends the request with a 400 (JSON
    ``{error}`` for the API, a plain page otherwise)."""
    try:
        return parse(request.args, default_limit)
    except PagingError as exc:
        if api:
            abort(make_response(jsonify(error=str(exc)), 400))
        abort(400, description=str(exc))


def url_of(page: Page, number: int) -> str:
    """This request's path and query with ``page`` set to ``number`` (and ``limit`` kept)."""
    args = {k: v for k, v in request.args.items() if k not in ("page", "limit")}
    args["page"] = str(number)
    if page.limit != DEFAULT_LIMIT or "limit" in request.args:
        args["limit"] = str(page.limit)
    return f"{request.path}?{urlencode(args)}"


def links(page: Page, has_next: bool) -> dict:
    """``{page, limit, next, previous}`` for a JSON answer or a template (URLs or None)."""
    return {"page": page.number, "limit": page.limit,
            "next": url_of(page, page.number + 1) if has_next else None,
            "previous": url_of(page, page.number - 1) if page.number > 1 else None}
