"""Expected against called tools, as columns of a timeline: the same alignment the ordering score is made of.

The longest common subsequence pairs calls that were made where the order allows; an expected call left out is
*out of order* when an unpaired call of its tool exists (that call is its counterpart) and *missing*
otherwise; an unpaired call with no counterpart is *extra*. Columns keep both rows in their own order, so a
matched pair shares a column and an out-of-order pair is joined across columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentotel_eval.metrics.tool_correctness import score_names

MATCHED = "matched"
MISSING = "missing"
EXTRA = "extra"
OUT_OF_ORDER = "out_of_order"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: an expected call (top row), a called call (bottom row), or both when they are a matched
    pair. ``kind`` is MATCHED, MISSING (top only), EXTRA (bottom only) or OUT_OF_ORDER (either row;
    ``partner`` is the column of its counterpart on the other row)."""

    kind: str
    expected: int | None = None  # index into the expected list
    called: int | None = None  # index into the called list
    partner: int | None = None


@dataclass(frozen=True, slots=True)
class Alignment:
    expected: tuple[str, ...]
    called: tuple[str, ...]
    columns: tuple[Column, ...]

    def count(self, kind: str) -> int:
        """Calls of a kind; an out-of-order pair counts once."""
        return sum(
            1 for c in self.columns if c.kind == kind and (kind != OUT_OF_ORDER or c.expected is not None)
        )


def align(expected: Sequence[str], called: Sequence[str]) -> Alignment:
    """The timeline columns of ``called`` against ``expected`` (tool names, in order)."""
    outcome = score_names(list(expected), list(called), check_ordering=True)
    counterpart_of_expected = dict(outcome.out_of_order)
    counterpart_of_called = {j: i for i, j in outcome.out_of_order}
    raw: list[tuple[str, int | None, int | None]] = []
    next_expected = next_called = 0

    def flush(until_expected: int, until_called: int) -> None:
        nonlocal next_expected, next_called
        for i in range(next_expected, until_expected):
            raw.append((OUT_OF_ORDER if i in counterpart_of_expected else MISSING, i, None))
        for j in range(next_called, until_called):
            raw.append((OUT_OF_ORDER if j in counterpart_of_called else EXTRA, None, j))
        next_expected, next_called = until_expected, until_called

    for pair_expected, pair_called, _weight in sorted(outcome.pairs):
        flush(pair_expected, pair_called)
        raw.append((MATCHED, pair_expected, pair_called))
        next_expected, next_called = pair_expected + 1, pair_called + 1
    flush(len(expected), len(called))
    column_of_expected = {i: k for k, (_, i, _) in enumerate(raw) if i is not None}
    column_of_called = {j: k for k, (_, _, j) in enumerate(raw) if j is not None}
    columns = []
    for kind, i, j in raw:
        partner = None
        if kind == OUT_OF_ORDER:
            partner = (
                column_of_called[counterpart_of_expected[i]]
                if i is not None
                else column_of_expected[counterpart_of_called[j]]
                if j is not None
                else None
            )
        columns.append(Column(kind, i, j, partner))
    return Alignment(tuple(expected), tuple(called), tuple(columns))


_MARK = {MATCHED: "", MISSING: "missing", EXTRA: "extra", OUT_OF_ORDER: "out of order"}


def alignment_text(expected: Sequence[str], called: Sequence[str], indent: str = "  ") -> list[str]:
    """The timeline as three aligned lines of text (expected, called, marks), for a
    terminal or a test failure:

    expected  search_hotels  book_hotel
    called    search_hotels              sort_by_price
                             missing     extra
    """
    a = align(expected, called)
    if not a.columns:
        return [f"{indent}expected (none)", f"{indent}called   (none)", ""]
    cells: list[tuple[str, str, str]] = []
    for column in a.columns:
        top = a.expected[column.expected] if column.expected is not None else ""
        bottom = a.called[column.called] if column.called is not None else ""
        cells.append((top, bottom, _MARK[column.kind]))
    widths = [max(len(top), len(bottom), len(mark)) for top, bottom, mark in cells]
    lines = []
    for label, row in (("expected", 0), ("called", 1), ("", 2)):
        text = "  ".join(cell[row].ljust(width) for cell, width in zip(cells, widths, strict=True))
        lines.append(f"{indent}{label:<9}{text}".rstrip())
    return lines
