"""heliabuild.sweeps.grid: a sweep's points and their folder names, for all grids (hypothesis) and by example."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.sweeps.grid import MAX_NAME, MAX_TEXT, GridError, Point, canonical, expand

FOLDER = re.compile(r"[A-Za-z0-9_.+=,~-]+")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["ethos-u55-128", "Ethos-U55-128", "a/x.ini", "b/x.ini", "x.ini", "30000", "none", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
axis_names = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True)


def unique_values(min_size: int = 1, max_size: int = 4) -> st.SearchStrategy[list[Any]]:
    return st.lists(values, min_size=min_size, max_size=max_size, unique_by=canonical)


@st.composite
def grids(draw: st.DrawFn) -> dict[Any, list[Any]]:
    """Grids of 1 to 4 keys, each an axis or a tuple of two linked axes (with pairs of values)."""
    names = draw(st.lists(axis_names, min_size=1, max_size=5, unique=True))
    grid: dict[Any, list[Any]] = {}
    while names:
        if len(names) >= 2 and draw(st.booleans()):
            key, names = (names[0], names[1]), names[2:]
            grid[key] = draw(st.lists(st.tuples(values, values), min_size=1, max_size=4, unique_by=canonical))
        else:
            grid[names[0]], names = draw(unique_values()), names[1:]
    return grid


def flat_axes(grid: dict[Any, list[Any]]) -> list[str]:
    return [axis for key in grid for axis in (key if isinstance(key, tuple) else (key,))]


@given(grids())
def test_distinct_points_get_distinct_folders_also_ignoring_case(grid: dict[str, list[Any]]) -> None:
    points = expand(grid)
    folders = [point.folder for point in points]
    assert len({folder.lower() for folder in folders}) == len(points)
    for point in points:
        assert FOLDER.fullmatch(point.folder), point.folder
        assert len(point.folder) <= MAX_NAME
        assert point.folder not in (".", "..")


@given(grids())
def test_points_are_the_product_in_grid_order_and_names_are_deterministic(grid: dict[str, list[Any]]) -> None:
    points = expand(grid)
    count = 1
    for column in grid.values():
        count *= len(column)
    assert len(points) == count
    assert [list(point.values) for point in points] == [flat_axes(grid)] * count

    def values_at(position: int) -> list[Any]:
        chosen = [column[position] for column in grid.values()]
        return [
            item
            for key, value in zip(grid, chosen, strict=True)
            for item in (value if isinstance(key, tuple) else (value,))
        ]

    assert list(points[0].values.values()) == values_at(0)
    assert list(points[-1].values.values()) == values_at(-1)
    assert [p.folder for p in expand(grid)] == [p.folder for p in points]


@given(
    st.dictionaries(
        axis_names,
        st.lists(
            st.integers(min_value=0, max_value=10**6) | st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
            min_size=1,
            max_size=3,
            unique_by=lambda value: str(value).lower(),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_plain_values_read_as_they_are(grid: dict[str, list[Any]]) -> None:
    """Numbers and short names that no other value of the axis reads like need no hash."""
    for point in expand(grid):
        assert point.folder == ",".join(f"{axis}={value}" for axis, value in point.values.items())


@given(grids())
def test_a_point_round_trips_through_json(grid: dict[str, list[Any]]) -> None:
    for point in expand(grid):
        assert Point.from_json(point.to_json()).folder == point.folder
        assert canonical(Point.from_json(point.to_json()).to_json()) == canonical(point.to_json())


def test_readable_names_of_typical_axes() -> None:
    points = expand(
        {
            "accelerator": ["ethos-u55-128", "ethos-u85-256"],
            "budget_cycles": [30000, None],
            "fences": [[3, 6]],
            "vela_config": ["configs/u55.ini"],
        }
    )
    assert [point.folder for point in points] == [
        "accelerator=ethos-u55-128,budget_cycles=30000,fences=3+6,vela_config=u55.ini",
        "accelerator=ethos-u55-128,budget_cycles=none,fences=3+6,vela_config=u55.ini",
        "accelerator=ethos-u85-256,budget_cycles=30000,fences=3+6,vela_config=u55.ini",
        "accelerator=ethos-u85-256,budget_cycles=none,fences=3+6,vela_config=u55.ini",
    ]


def test_linked_axes_vary_together_and_each_names_its_own_part() -> None:
    targets = [("ethos-u55-128", "corstone300_ethos_u55"), ("ethos-u55-256", "corstone300_ethos_u55")]
    points = expand({("accelerator", "platform"): targets, "budget_cycles": [1, 2]})
    assert [point.folder for point in points] == [
        "accelerator=ethos-u55-128,platform=corstone300_ethos_u55,budget_cycles=1",
        "accelerator=ethos-u55-128,platform=corstone300_ethos_u55,budget_cycles=2",
        "accelerator=ethos-u55-256,platform=corstone300_ethos_u55,budget_cycles=1",
        "accelerator=ethos-u55-256,platform=corstone300_ethos_u55,budget_cycles=2",
    ]  # a value shared by linked values reads as itself: it is one value
    assert dict(points[2].values) == {
        "accelerator": "ethos-u55-256",
        "platform": "corstone300_ethos_u55",
        "budget_cycles": 1,
    }


def test_values_that_read_alike_long_values_and_mappings_are_hashed() -> None:
    folders = [point.folder for point in expand({"vela_config": ["a/x.ini", "b/x.ini", "c.ini", "b_x.ini"]})]
    assert folders[0] == "vela_config=a_x.ini" and folders[2] == "vela_config=c.ini"
    assert re.fullmatch(r"vela_config=b_x\.ini~[0-9a-f]{8}", folders[1]) and folders[1] != folders[3]
    paths = [point.folder for point in expand({"policy": ["policy.yaml", "other/policy.yaml", "x/p/q", "y/p/q"]})]
    assert paths == ["policy=policy.yaml", "policy=other_policy.yaml", "policy=x_p_q", "policy=y_p_q"]
    cased = [point.folder for point in expand({"system_config": ["Sys", "sys"]})]
    assert all("~" in folder for folder in cased) and cased[0].lower() != cased[1].lower()
    (long,) = expand({"system_config": ["S" * 40]})
    assert re.fullmatch(rf"system_config=S{{{MAX_TEXT}}}~[0-9a-f]{{8}}", long.folder)
    (mapping,) = expand({"policy": [{"defaults": {}}]})
    assert re.fullmatch(r"policy=~[0-9a-f]{8}", mapping.folder)


def test_a_name_past_the_limit_is_cut_and_ends_with_the_points_hash() -> None:
    grid = {f"axis_{k}": [f"value-{k}-" + "v" * 20] for k in range(10)}
    (point,) = expand(grid)
    assert len(point.folder) == MAX_NAME and re.search(r"~~[0-9a-f]{16}$", point.folder)


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({}, "the grid is {}"),
        ([("a", [1])], "expected a mapping"),
        ({"budget_cycles": 30000}, "grid axis budget_cycles is 30000; expected a non-empty list"),
        ({"budget_cycles": "30000"}, "expected a non-empty list"),
        ({"budget_cycles": []}, "expected a non-empty list"),
        ({"budget_cycles": [1, 1]}, "grid axis budget_cycles lists 1 twice"),
        ({"fences": [[3, 6], (3, 6)]}, "grid axis fences lists (3, 6) twice (as [3, 6] too)"),
        ({"3d": [1]}, "grid axis '3d' is not a name"),
        ({"budget_cycles": [float("nan")]}, "nan is not a finite number"),
        ({"policy": [{1: 2}]}, "the mapping key 1 is not a string"),
        ({"policy": [object]}, "is not a grid value"),
        ({("a", "b"): [(1, 2), (1,)]}, "grid axes (a, b): (1,) is not a list of 2 values, one per axis"),
        ({("a", "b"): [(1, 2)], "a": [3]}, "grid axis a is named twice"),
        ({("a", "b"): [(1, 2), [1, 2]]}, "grid axis a, b lists (1, 2) twice"),
    ],
)
def test_a_grid_that_cannot_work_is_one_clear_error(grid: Any, message: str) -> None:
    with pytest.raises(GridError) as raised:
        expand(grid)
    assert message in raised.value.message
