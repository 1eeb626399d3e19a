"""The plain-text table every heliabuild view prints (`show`, `compare`, `ops`, the build summary, the sweep
table): a header, a rule of dashes, then one line per row, columns two spaces apart and each as wide as its
widest cell. Cells are text: the caller formats each figure in its unit first (heliabuild.units)."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def text_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (), indent: str = ""
) -> list[str]:
    """The table's lines: the header, the rule, the rows. A column whose position is in `right` is aligned to
    the right (figures), any other to the left; every line starts with `indent` and has no trailing space.
    ValueError for a row with another number of cells than the header."""
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a table row has {len(row)} cells, its header {len(header)}: {list(row)!r}")
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        aligned = (
            cell.rjust(width) if position in right else cell.ljust(width)
            for position, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return (indent + "  ".join(aligned)).rstrip()

    rule = (indent + "  ".join("-" * width for width in widths)).rstrip()
    return [line(header), rule, *(line(row) for row in rows)]
