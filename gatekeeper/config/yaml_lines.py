"""YAML loading that remembers where every key came from, for errors that name file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gatekeeper.errors import ConfigError


class LineDict(dict):
    """A dict that knows the 1-based line of each key (`line_of`) and of itself (`line`)."""

    line: int | None = None
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int | None:
        """Line where `key` was written, else the mapping's own line."""
        return getattr(self, "key_lines", {}).get(key, self.line)


class LineList(list):
    """A list that knows its line and each item's line."""

    line: int | None = None
    item_lines: list[int]


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a plain value", key_node.start_mark) from None
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; syntax errors become one-line ConfigErrors with file and line."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", str(p)) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a YAML file", str(p)) from None
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror or e}", str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        raise ConfigError(f"not UTF-8 (byte {e.start - line_start + 1} of the line)", str(p),
                          data.count(b"\n", 0, e.start) + 1) from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigError(problem, str(p), line) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}", str(p)) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", str(p)) from None


def line_of(obj: Any, key: Any = None) -> int | None:
    """Line of `key` in a LineDict (or of the object itself)."""
    if isinstance(obj, LineDict):
        return obj.line_of(key) if key is not None else obj.line
    return getattr(obj, "line", None)


def line_at(root: Any, path: tuple[Any, ...]) -> int | None:
    """Line of the value at `path` (keys and list indexes) below `root`, else of the deepest
    mapping or list on the way that knows its line."""
    line, node = line_of(root), root
    for step in path:
        if isinstance(node, LineDict) and step in node:
            line, node = node.line_of(step) or line, node[step]
        elif isinstance(node, LineList) and isinstance(step, int) and 0 <= step < len(node):
            line, node = node.item_lines[step] if step < len(getattr(node, "item_lines", [])) else line, node[step]
        else:
            break
    return line
