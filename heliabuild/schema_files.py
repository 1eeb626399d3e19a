"""JSON Schemas of the files heliabuild writes and reads, and validation against them."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from heliabuild.errors import SchemaError


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema `schemas/<name>.schema.json` as shipped with the package."""
    text = resources.files("heliabuild.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


MAX_MESSAGE = 200
"""The longest schema message quoted: jsonschema's messages hold the repr of the offending value."""


def message_of(error: jsonschema.exceptions.ValidationError) -> str:
    """jsonschema's message for `error`, cut to MAX_MESSAGE characters so that a huge value found in a
    document never makes a huge error message."""
    text = error.message
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def validate(document: Any, schema_name: str, source: str) -> None:
    """Raise SchemaError naming `source` and the first failing field."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise SchemaError(f"{source}: {where}: {message_of(error)} (schema {schema_name})")
