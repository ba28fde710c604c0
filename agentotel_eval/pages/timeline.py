"""Where each cell and link of a run's timeline goes: expected calls on the top row, called ones below, a
matched pair in one column and joined, an out-of-order pair joined across columns (``alignment`` decides the
columns). ``templates/timeline.html`` draws it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from agentotel_eval.metrics.alignment import EXTRA, MATCHED, MISSING, OUT_OF_ORDER, Alignment

CELL_W, CELL_H, GAP, LEFT = 132, 30, 14, 78
TOP_Y, BOTTOM_Y = 22, 104
CALLED = "called"  # a call of a run without expectations: nothing to align against
_KIND_LABEL = {MISSING: "missing", EXTRA: "extra", OUT_OF_ORDER: "out of order", MATCHED: "", CALLED: ""}


class Link(NamedTuple):
    kind: str  # matched | out_of_order
    x1: float
    x2: float
    tool: str  # the out-of-order pair's tool


class Cell(NamedTuple):
    """A call on the timeline (``timeline.html`` unpacks it: its fields in this order)."""

    row: str  # expected | called
    kind: str
    position: int  # in its row's list, from 0
    tool: str
    label: str  # the tool's name, cut to fit the cell
    error: bool  # a call that failed
    title: str  # "called #2: get_weather (extra, error)"
    mark: str  # under or over the cell: "extra · error", "" for a matched call
    x: int
    y: int
    centre: float
    mark_y: int


class Timeline(NamedTuple):
    width: int
    height: int
    links: list[Link]
    cells: list[Cell]
    cell_w: int = CELL_W
    cell_h: int = CELL_H
    top_y: int = TOP_Y
    bottom_y: int = BOTTOM_Y


def _cut(name: str, width: int = 17) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def timeline(alignment: Alignment, failed: Sequence[bool] = ()) -> Timeline:
    """The drawing of ``alignment``; ``failed[j]``: the j-th call failed."""

    def centre(k: int) -> float:
        return LEFT + k * (CELL_W + GAP) + CELL_W / 2

    links = []
    for k, col in enumerate(alignment.columns):
        if col.kind == MATCHED:
            links.append(Link(MATCHED, centre(k), centre(k), ""))
        elif col.kind == OUT_OF_ORDER and col.expected is not None and col.partner is not None:
            links.append(Link(OUT_OF_ORDER, centre(k), centre(col.partner), alignment.expected[col.expected]))
    cells = []
    for k, col in enumerate(alignment.columns):
        x = LEFT + k * (CELL_W + GAP)
        for row, index, y in (("expected", col.expected, TOP_Y), ("called", col.called, BOTTOM_Y)):
            if index is None:
                continue
            name = (alignment.expected if row == "expected" else alignment.called)[index]
            error = row == "called" and index < len(failed) and failed[index]
            notes = [note for note in (_KIND_LABEL[col.kind], "error" if error else "") if note]
            title = f"{row} #{index + 1}: {name}" + (f" ({', '.join(notes)})" if notes else "")
            cells.append(
                Cell(
                    row,
                    col.kind,
                    index,
                    name,
                    _cut(name),
                    error,
                    title,
                    " · ".join(notes),
                    x,
                    y,
                    x + CELL_W / 2,
                    y - 5 if row == "expected" else y + CELL_H + 13,
                )
            )
    return Timeline(
        LEFT + max(len(alignment.columns), 1) * (CELL_W + GAP), BOTTOM_Y + CELL_H + 26, links, cells
    )
