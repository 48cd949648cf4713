"""Declarative backends: a backend is a table of paths.

Each ``Path`` names its pattern, typed fields, operations and help text, so
routing, input validation, ``?help=1`` and the OpenAPI document all come
from the same table.
"""

from node.framework.backend import FrameworkBackend
from node.framework.fields import Field, FieldData, FieldType, parse_duration
from node.framework.path import Handler, Path, PathGroup

__all__ = [
    "Field",
    "FieldData",
    "FieldType",
    "FrameworkBackend",
    "Handler",
    "Path",
    "PathGroup",
    "parse_duration",
]
