"""Field-by-field comparison of schema object trees."""

from __future__ import annotations

import numpy as np

from heliabuild.model.io import external_data

# Where data lies after the flatbuffer, these fields are recomputed on every
# write; the data itself is compared instead.
_PLACEMENT_FIELDS = {"offset", "size", "largeCustomOptionsOffset", "largeCustomOptionsSize"}


def differences(left: object, right: object, path: str = "model", limit: int = 20) -> list[str]:
    """Describe where two object trees differ, up to `limit` places.

    Strings compare equal to their UTF-8 bytes and vectors compare by value,
    whether held as lists or numpy arrays; None and an empty vector differ,
    as they do in the flatbuffer.
    """
    found: list[str] = []
    _walk(left, right, path, found, limit)
    return found


def _walk(left: object, right: object, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit:
        return
    left, right = _normal(left), _normal(right)
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            found.append(f"{path}: length {len(left)} != {len(right)}")
            return
        if _is_scalar_vector(left) and _is_scalar_vector(right):
            if left != right:
                first = next(i for i, (a, b) in enumerate(zip(left, right, strict=True)) if a != b)
                found.append(f"{path}[{first}]: {left[first]!r} != {right[first]!r}")
            return
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            _walk(a, b, f"{path}[{index}]", found, limit)
        return
    if hasattr(left, "__dict__") and hasattr(right, "__dict__") and not isinstance(left, type):
        if type(left) is not type(right):
            found.append(f"{path}: {type(left).__name__} != {type(right).__name__}")
            return
        left_data, right_data = external_data(left), external_data(right)
        placed_outside = left_data is not None or right_data is not None
        if placed_outside:
            _walk(_data_of(left, left_data), _data_of(right, right_data), f"{path}.data", found, limit)
        for name in sorted(set(vars(left)) | set(vars(right))):
            if name.startswith("heliabuild_") or (placed_outside and name in _PLACEMENT_FIELDS | {"data"}):
                continue
            _walk(getattr(left, name, None), getattr(right, name, None), f"{path}.{name}", found, limit)
        return
    if left != right:
        found.append(f"{path}: {left!r} != {right!r}")


def _data_of(owner: object, outside: np.ndarray | None) -> object:
    if outside is not None:
        return outside
    return getattr(owner, "data", None) if hasattr(owner, "data") else getattr(owner, "customOptions", None)


def _normal(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _is_scalar_vector(values: list[object]) -> bool:
    return all(isinstance(v, int | float | bool | bytes | np.generic) for v in values)
