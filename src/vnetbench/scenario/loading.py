"""Reading a scenario file safely: bounded, never blocking, never a traceback.

A scenario is hostile input until proven otherwise. ``read_text`` accepts only a regular
file (opened without blocking, so a FIFO never hangs; /dev/zero is not a file) of at most
``MAX_FILE_BYTES``, UTF-8 without NUL bytes. ``parse_yaml`` composes the YAML with a loader
that refuses nesting deeper than ``MAX_DEPTH``, then walks the node graph once
(``check_yaml_tree``) to refuse alias and size bombs (more than ``MAX_YAML_NODES`` values
with every alias use counted), duplicate keys, keys that are not plain names and values of a
type no scenario holds (``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``), before any Python
object is built. Every refusal is one ``ScenarioError`` line (``one_line``) naming
the file and, where there is one, the line.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import yaml
from yaml.composer import ComposerError
from yaml.reader import ReaderError

from vnetbench.errors import ScenarioError

MAX_FILE_BYTES = 1024 * 1024
"""Largest scenario file read (1 MiB; the shipped ones are below 2 KiB)."""
MAX_YAML_NODES = 100_000
"""Most YAML values (keys, scalars, lists, mappings) a file may expand to, aliases counted
every time they are used: an alias bomb is refused before it is built."""
MAX_DEPTH = 64
"""Deepest nesting of lists and mappings (aliases included)."""
def shown(value: object) -> str:
    """``value`` for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean bridge?)`` when ``word`` is text close to one of ``choices`` (difflib's
    ratio at least 0.6, the closest), else empty: put right after the name in a message."""
    if not isinstance(word, str):
        return ""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


MAX_MESSAGE = 600
"""Longest error message (a hostile file's keys and values are cut to fit)."""


def one_line(message: str) -> str:
    """``message`` as one printable line of at most ``MAX_MESSAGE`` characters (newlines,
    terminal escapes and other control characters shown escaped)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def scenario_error(source: str, message: str) -> ScenarioError:
    return ScenarioError(one_line(f"{source}: {message}"))


def read_text(path: Path) -> str:
    """The file's text: a regular file (opened without blocking, so a FIFO never hangs) of
    at most MAX_FILE_BYTES, UTF-8, not binary; ScenarioError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise scenario_error(str(path), f"cannot read: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a file")
        raise scenario_error(str(path), f"is {kind}; a scenario must be a regular file")
    too_big = scenario_error(str(path), f"is larger than {MAX_FILE_BYTES // 1024} KiB; a scenario "
                                "file may be at most 1 MiB")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > MAX_FILE_BYTES:
            raise too_big
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise scenario_error(str(path), f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise too_big
    if b"\0" in data:
        raise scenario_error(str(path), "is a binary file (it holds NUL bytes), not YAML text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise scenario_error(str(path), f"line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                f"at offset {exc.start}); save the file as UTF-8") from None


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that refuses nesting deeper than MAX_DEPTH while composing (the
    composer recurses once per level)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None, None, f"lists and mappings are nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNREAD_TAGS = {f"tag:yaml.org,2002:{kind}": kind for kind in ("binary", "set", "omap", "pairs")}
"""YAML types a scenario has no value of (it holds text, numbers, true/false, null, lists and
mappings): ``!!binary`` would otherwise reach a text field as decoded bytes, ``!!set`` and
``!!omap`` as containers no key takes."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _check_keys(node: yaml.MappingNode) -> str | None:
    """A problem with the keys of one mapping: not text, or given twice."""
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            return f"line {_line(key)}: a key must be a plain name, not a list or mapping"
        if key.tag == _MERGE_TAG:
            continue
        if key.tag != _STR_TAG:
            kind = key.tag.rsplit(":", 1)[-1]
            return (f"line {_line(key)}: key {shown(key.value)} is read as {kind}, not text; "
                    "quote it")
        if key.value in seen:
            return (f"line {_line(key)}: duplicate key {shown(key.value)} (first given on "
                    f"line {seen[key.value]}); give each key once")
        seen[key.value] = _line(key)
    return None


def check_yaml_tree(root: yaml.Node) -> str | None:
    """A problem with a composed YAML document, else None: too many values once aliases are
    expanded, nested too deeply, an alias inside its own anchor, or bad keys.

    Walks each distinct node once (an alias shares its anchor's node), so an alias bomb is
    measured, not built: its size is the sum over children, computed bottom-up."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > MAX_YAML_NODES:
                return (f"line {_line(node)}: the document expands to more than "
                        f"{MAX_YAML_NODES} values (each use of an alias counts); a scenario "
                        "needs far fewer")
            if depth[key] > MAX_DEPTH:
                return (f"line {_line(node)}: lists and mappings are nested deeper than "
                        f"{MAX_DEPTH} levels (aliases included)")
            continue
        if key in size:
            continue
        if key in on_path:
            return f"line {_line(node)}: an alias refers to a list or mapping that contains it"
        if node.tag in _UNREAD_TAGS:
            return (f"line {_line(node)}: a !!{_UNREAD_TAGS[node.tag]} value is not read: a "
                    "scenario holds text, numbers, true/false, lists and mappings; write the "
                    "value as one of those")
        if isinstance(node, yaml.MappingNode):
            problem = _check_keys(node)
            if problem:
                return problem
        on_path.add(key)
        stack.append((node, True))
        stack.extend((kid, False) for kid in reversed(_children(node)) if id(kid) not in size)
    return None


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """One line for a PyYAML error: ``line N is not valid YAML: <problem>``."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} " if mark else ""
        what = exc.problem or exc.context or "malformed"
        return f"{where}is not valid YAML: {what}"
    if isinstance(exc, ReaderError):
        position = int(exc.position)
        line = text[:position].count("\n") + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(str(char)[:1] or "?")
        return (f"line {line} is not valid YAML: control character #x{code:04x} is not "
                "allowed in YAML text")
    return f"is not valid YAML: {exc}"


def parse_yaml(text: str, source: str) -> object:
    """The data of one YAML document, read by the bounded loader; ScenarioError with the
    line for anything malformed, oversized or ambiguous (duplicate keys)."""
    try:
        loader = _BoundedLoader(text)  # checks every character is allowed in YAML
    except yaml.YAMLError as exc:
        raise scenario_error(source, _yaml_problem(exc, text)) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problem = check_yaml_tree(node)
        if problem:
            raise scenario_error(source, problem)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise scenario_error(source, _yaml_problem(exc, text)) from None
    except (ValueError, TypeError, AttributeError, LookupError, OverflowError,
            RecursionError) as exc:
        # PyYAML's constructors raise these for e.g. ``!!int abc``, ``!!timestamp x`` or
        # ``!!bool maybe`` (a KeyError)
        what = f"no such value: {exc}" if isinstance(exc, LookupError) else str(exc)
        raise scenario_error(source, f"is not valid YAML: a value cannot be read ({what})") from None
    finally:
        loader.dispose()


