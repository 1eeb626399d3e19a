"""JSON Schemas of the files heliabuild writes and reads, validation against them, and the one formatter of an
unknown key in a schema-validated input (`check_keys`).

Validation has two validators behind it: jsonschema-rs (compiled, cached per schema) answers whether a
document is valid, in microseconds; only for an invalid document does python-jsonschema walk it again to name
the first failing field (`best_match`), so every message is python-jsonschema's. Both implement Draft 2020-12
(formats are annotations in both); tests/test_schema_validators.py checks that they agree on the documents
heliabuild writes and on mutations of them. One difference is by design: jsonschema-rs takes a Python tuple
for an array, as `json.dumps` writes it, where python-jsonschema takes only a list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from heliabuild.documents import shown
from heliabuild.errors import HeliaError, SchemaError

if TYPE_CHECKING:
    import jsonschema


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema `schemas/<name>.schema.json` as shipped with the package."""
    return load_schema_file(f"{name}.schema.json")


@cache
def load_schema_file(file_name: str) -> dict[str, Any]:
    """The schema `schemas/<file_name>` as shipped with the package."""
    from importlib import resources  # here, not at the top: a no-op build validates nothing and reads no schema

    return json.loads(resources.files("heliabuild.schemas").joinpath(file_name).read_text("utf-8"))


@cache
def _compiled(file_name: str) -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(load_schema_file(file_name))


def is_valid(document: Any, file_name: str) -> bool:
    """Whether `document` validates against `schemas/<file_name>`, by jsonschema-rs (see the module docstring);
    a document it cannot take (a value that is not JSON) is left to python-jsonschema."""
    try:
        return bool(_compiled(file_name).is_valid(document))
    except (ValueError, TypeError, OverflowError):
        return False


def first_error(document: Any, file_name: str) -> jsonschema.exceptions.ValidationError | None:
    """The error python-jsonschema names first (`best_match`) for `document` against `schemas/<file_name>`,
    or None when it is valid; python-jsonschema runs only when jsonschema-rs finds the document invalid."""
    if is_valid(document, file_name):
        return None
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema_file(file_name))
    return jsonschema.exceptions.best_match(validator.iter_errors(document))


MAX_MESSAGE = 200
"""The longest schema message quoted: jsonschema's messages hold the repr of the offending value."""


def message_of(error: jsonschema.exceptions.ValidationError) -> str:
    """jsonschema's message for `error`, cut to MAX_MESSAGE characters so that a huge value found in a
    document never makes a huge error message."""
    text = error.message
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def validate(document: Any, schema_name: str, source: str) -> None:
    """Raise SchemaError naming `source` and the first failing field."""
    error = first_error(document, f"{schema_name}.schema.json")
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise SchemaError(f"{source}: {where}: {message_of(error)} (schema {schema_name})")


def check_keys(
    document: Any,
    schema_name: str,
    source: str,
    *,
    error: type[HeliaError] = SchemaError,
    index_format: str = ".{}",
) -> None:
    """Raise `error` for the first key (in document order) that the schema `schema_name` does not allow where it
    stands, as `<source>: <path>: unknown key 'x'; did you mean 'y'? (accepts a, b, c)`.

    The keys an object accepts are its schema's `properties`, where the schema closes the object
    (`additionalProperties: false`); `$ref`s are followed, and an object under `oneOf`/`anyOf` is checked
    against the one branch that lists properties. `path` joins keys with `.` and list positions with
    `index_format` (`.{}` gives `operators.0`, `[{}]` gives `inputs[0]`); `(top level)` for the document
    itself. The suggestion is the nearest accepted key (difflib), left out when none is near. Values of any
    other type are left to validation."""
    root = load_schema(schema_name)

    def resolve(schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and str(schema.get("$ref", "")).startswith("#/"):
            target: Any = root
            for part in schema["$ref"][2:].split("/"):
                target = target[part]
            schema = target
        return schema if isinstance(schema, dict) else {}

    def object_schema(schema: Any) -> dict[str, Any] | None:
        schema = resolve(schema)
        if "properties" in schema:
            return schema
        branches = [resolve(b) for b in (*schema.get("oneOf", ()), *schema.get("anyOf", ()))]
        objects = [b for b in branches if "properties" in b]
        return objects[0] if len(objects) == 1 else None

    def walk(value: Any, schema: Any, path: str) -> None:
        if isinstance(value, Mapping):
            found = object_schema(schema)
            if found is None:
                return
            properties: dict[str, Any] = found["properties"]
            extra = found.get("additionalProperties", True)
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if key in properties:
                    walk(item, properties[key], where)
                elif extra is False:
                    import difflib  # only to name a refused key

                    accepted = sorted(properties)
                    near = difflib.get_close_matches(str(key), accepted, n=1, cutoff=0.6)
                    suggestion = f"; did you mean {near[0]!r}?" if near else ""
                    raise error(
                        f"{source}: {path or '(top level)'}: unknown key {shown(key)}{suggestion} "
                        f"(accepts {', '.join(accepted)})"
                    )
                elif isinstance(extra, dict):
                    walk(item, extra, where)
        elif isinstance(value, list):
            items = resolve(schema).get("items")
            if isinstance(items, dict):
                for position, item in enumerate(value):
                    walk(item, items, path + index_format.format(position))

    walk(document, root, "")
