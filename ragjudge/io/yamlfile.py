"""Strict YAML reading for configuration files: duplicate keys are errors, and every key's line
is kept so that a later validation error can name ``file:line``.

PyYAML keeps the last of two equal keys silently (``ks: [1]`` then ``ks: [5]`` runs k = 5);
here the second one raises ``ConfigError`` naming both lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ragjudge.errors import ConfigError

KeyPath = tuple[str | int, ...]
"""Where a value sits in the document: mapping keys and sequence indices from the root."""


def _walk(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                where = ".".join(str(p) for p in (*path, key))
                raise ConfigError(
                    f"{source}:{line}: duplicate key {where!r} (first on line {seen[key]}); "
                    "YAML would silently keep only the last one"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), lines, source)


def parse_yaml(text: str, source: str = "<yaml>") -> tuple[Any, dict[KeyPath, int]]:
    """The data of one YAML document and the 1-based line of each key and list item.

    Raises ``ConfigError`` (``source:line: ...``) on invalid YAML and on a duplicate key."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[KeyPath, int] = {}
        if node is None:
            return None, lines
        _walk(node, (), lines, source)
        return loader.construct_document(node), lines
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None:
            problem += f" ({context} on line {start.line + 1})"
        raise ConfigError(f"{source}{where}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()


def expect_mapping(data: Any, source: str, keys: Iterable[str]) -> dict[Any, Any]:
    """``data`` when it is a mapping; else a ``ConfigError`` naming ``source`` and the ``keys``
    expected: ``source: the file is empty; expected a mapping with keys ...`` for ``None`` (a
    file of 0 bytes or only comments), ``source: expected a mapping with keys ..., got a
    list`` (a string, a number ...) for any other document."""
    if isinstance(data, dict):
        return data
    expected = f"expected a mapping with keys {', '.join(keys)}"
    if data is None:
        raise ConfigError(f"{source}: the file is empty; {expected}")
    kinds = {bool: "true/false", int: "a number", float: "a number", str: "a string"}
    got = "a list" if isinstance(data, list) else kinds.get(type(data), type(data).__name__)
    raise ConfigError(f"{source}: {expected}, got {got}")


def load_yaml(path: str | Path, what: str = "file") -> tuple[Any, dict[KeyPath, int]]:
    """``parse_yaml`` of a file; an unreadable file is a ``ConfigError`` naming it (and
    ``what`` it should have been)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{p}:{line}: not valid UTF-8 ({exc.reason}, byte {raw[exc.start]:#04x}); save the "
            f"{what} as UTF-8"
        ) from None
    return parse_yaml(text, str(p))
