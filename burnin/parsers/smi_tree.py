"""How ``nvidia-smi -q``'s indented 'Key : value' lines become a tree (burnin.parsers.nvidia_smi
reads the fields from it).

Two readers give the same tree. ``tree`` makes a node of every line. ``LazyNode`` cuts a line's
children out of the text only when they are asked for, one regex split a level, and makes the
sections that the GPUs of one output print alike one node, which ``read_once`` reads once: a
1,000-node preflight judges 1,000 of these outputs, and the parser reads some 40 of a GPU's
200 lines (measured: 2.0 -> 1.0 ms an output). ``read_tree`` takes the lazy reader where the
lines are indented as nvidia-smi indents them (ASCII, 4 spaces a level), ``tree`` elsewhere; a
property test holds the two to the same results (tests/unit/burnin/parsers/test_nvidia_smi_lazy.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TypeVar

from burnin.parsers._common import split_lines

T = TypeVar("T")


@dataclass(slots=True)
class Node:
    key: str
    value: str | None
    indent: int
    children: list[Node] = field(default_factory=list)
    # lower-case key -> (position, first child with it), built on the first find: a GPU block is
    # searched some 400 times per `nvidia-smi -q`, once per node of a 1,000-node run
    _index: dict[str, tuple[int, Node]] | None = None
    _read: dict | None = None  # read_once's results

    def find(self, *names: str) -> Node | None:
        """First child whose key equals one of names (case-insensitive)."""
        index = self._index
        if index is None:
            index = self._index = {}
            for i, child in enumerate(self.children):
                index.setdefault(child.key.lower(), (i, child))
        if len(names) == 1:
            hit = index.get(names[0].lower())
            return hit[1] if hit is not None else None
        hits = [hit for n in names if (hit := index.get(n.lower())) is not None]
        return min(hits, key=lambda h: h[0])[1] if hits else None

    def get(self, *path: str) -> str | None:
        """Value at a path of keys; each path element may be 'A|B' for alternatives."""
        node: Node | None = self
        for part in path:
            if node is None:
                return None
            node = node.find(*part.split("|")) if "|" in part else node.find(part)
        return node.value if node else None

    def walk(self):
        """All descendants, depth first (iterative: nesting depth is unbounded in bad input)."""
        stack = list(reversed(self.children))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def empty(self) -> bool:
        return not self.children

    def has(self, key: str) -> bool:
        """Whether a child's key is `key`, exactly."""
        return any(c.key == key for c in self.children)


KV_RE = re.compile(r"^([^:]*?\S)\s*:(?:\s+(.*))?$")


def key_value(body: str) -> tuple[str, str | None]:
    """'Key : value' exactly as KV_RE reads it, without the regex (the parse was most of a
    preflight's judging at 1,000 nodes): the key runs to the first colon, which is followed by
    whitespace or the end; failing that, the key ends with that colon and a second one follows
    after optional whitespace (the regex's other reading). Anything else is a key alone."""
    before, colon, after = body.partition(":")
    if not colon:
        return body, None
    key = before.rstrip()
    if key and (not after or after[0].isspace()):
        return key, after.strip()
    rest = after.lstrip()
    if rest.startswith(":") and (len(rest) == 1 or rest[1].isspace()):
        return (before + ":").strip(), rest[1:].strip()
    return body, None


def tree(lines: list[str]) -> Node:
    root = Node("", None, -1, [])
    stack = [root]
    top = root  # stack[-1]
    for line in lines:
        if "\t" in line:
            line = line.expandtabs(4)
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        body = body.strip()  # as line.strip(): the spaces are gone already
        if not body:
            continue
        # key_value's common case inline (it runs for every line of 1,600): 'Key : value'
        before, colon, after = body.partition(":")
        key = before.rstrip()
        if colon and key and (not after or after[0].isspace()):
            value: str | None = after.strip()
        else:
            key, value = key_value(body)
        while top.indent >= indent:
            stack.pop()
            top = stack[-1]
        node = Node(key, value, indent, [])
        top.children.append(node)
        stack.append(node)
        top = node
    return root


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q, read lazily: tree makes a node of every line in Python, when nvidia_smi's _gpu looks at some
# 40 of a GPU's 200. A LazyNode cuts its children out of the text under its line only when they
# are asked for, all at once with one regex split (the per-line work done in C); a section that
# the GPUs of an output print alike (ECC, row remapping, clock event reasons...) is one node,
# which read_once judges once. That reads as tree does where the lines are indented as
# nvidia-smi indents them (4 spaces a level); elsewhere _Irregular, and tree reads the text.
# ---------------------------------------------------------------------------------------------


class _Irregular(Exception):
    """Lines not indented as nvidia-smi indents them: lazy_tree gives up, tree reads them."""


# The lines at the top (no indent), each up to its first colon; and, to refuse the text, any
# line indented by other than a multiple of 4 spaces. Without those, the children of a line at
# n spaces are the lines at n + 4 under it, as long as the first line under it is one of them.
_ROOT_RE = re.compile(r"\n(?:(?=[^ \n])([^\n:]*+)|(?:    )*+ {1,3}+(?=[^ \n])())")
_LAZY_DEPTH = 32  # deeper lines (none in real output) are tree's: the regexes stay few

# After a line's text up to its first colon: where the colon is followed by one of these (a
# space, the end of the line or of the text), or there is no colon, that text is its key.
_AFTER_COLON = ("", " ", "\n")
_NOWHERE = float("inf")  # the position of a key that no child has: after all of them


@functools.lru_cache(maxsize=16)
def _level_re(indent: int) -> re.Pattern[str]:
    """The lines at `indent` spaces, each up to its first colon ('\\n' and the spaces are a
    literal prefix, which the regex module finds quickly)."""
    return re.compile("\n" + " " * indent + r"(?=[^ \n])([^\n:]*+)")


class LazyNode:
    """A Node whose children are read from ``below``, the text under its line, when needed."""

    __slots__ = (
        "key",
        "value",
        "indent",
        "_below",
        "_memo",
        "_keys",
        "_rests",
        "_children",
        "_index",
        "_read",
    )

    def __init__(self, key: str, value: str | None, indent: int, below: str, memo: dict) -> None:
        self.key = key
        self.value = value
        self.indent = indent
        self._below = below  # from the newline that ends the line on
        self._memo = memo  # lazy_tree's, for all its nodes: nodes and indexes by their text
        self._keys: list[str] = []  # once cut: each child's line up to its first colon
        self._rests: list[str] | None = None  # and the rest of that line, with the text under it
        self._children: list[Node | LazyNode] | None = None
        self._index: dict[str, int] | None = None  # lower-case _keys -> first position
        self._read: dict | None = None  # read_once's results

    @property
    def children(self) -> list[Node | LazyNode]:
        if self._children is None:
            if self.indent < 0:  # the root: its GPU blocks stay lazy
                self._children = [self._child(i) for i in range(len(self._cut()))]
            else:  # all of them: tree reads the lines at once, quicker than one by one
                self._children = tree(self._below.split("\n")).children
        return self._children

    walk = Node.walk  # (over `children`)

    def empty(self) -> bool:
        return not self._cut()

    def has(self, key: str) -> bool:
        """Whether a child's key is `key`, exactly."""
        if ":" in key:
            return any(c.key == key for c in self.children)
        return any(self._line(i)[0] == key for i, k in enumerate(self._cut()) if k.rstrip() == key)

    def find(self, *names: str) -> Node | LazyNode | None:
        """First child whose key equals one of names (case-insensitive)."""
        i = self._position(names)
        return None if i is None else self._child(i)

    def get(self, *path: str) -> str | None:
        """Value at a path of keys; each path element may be 'A|B' for alternatives."""
        if not path:
            return self.value
        if len(path) > 1:
            node = self.find(*path[0].split("|"))
            return node.get(*path[1:]) if node else None
        i = self._position(path[0].split("|"))
        return None if i is None else self._line(i)[1]  # (a leaf's value, without making the leaf)

    def _cut(self) -> list[str]:
        if self._rests is None:
            self._keys, self._rests = _lines_under(self._below, self.indent + 4)
        return self._keys

    def _line(self, i: int, end: int = -1) -> tuple[str, str | None]:
        """Key and value of child i's line, which ends at `end` in its rest."""
        rest = self._rests[i]
        if end < 0:
            end = rest.find("\n")
            end = len(rest) if end < 0 else end
        return key_value((self._keys[i] + rest[:end]).rstrip(" "))

    def _child(self, i: int) -> Node | LazyNode:
        if self._children is not None:
            return self._children[i]
        rest = self._rests[i]
        end = rest.find("\n")
        if end < 0:  # nothing under the line
            return Node(*self._line(i, len(rest)), self.indent + 4)
        if self.indent < 0:  # a GPU block: each is different
            return LazyNode(*self._line(i, end), 0, rest[end:], self._memo)
        text = (self.indent, self._keys[i], rest)
        node = self._memo.get(text)
        if node is None:
            node = self._memo[text] = LazyNode(*self._line(i, end), self.indent + 4, rest[end:], self._memo)
        return node

    def _position(self, names: Sequence[str]) -> int | None:
        """Position of the first child whose key equals one of names (case-insensitive)."""
        index = self._index if self._index is not None else self._make_index()
        if len(names) == 1:  # most finds: no comprehension
            wanted: tuple[str, ...] = (names[0].lower(),)
            first = index.get(wanted[0])
            whole_lines = ":" in wanted[0] or not wanted[0]
        else:  # (map and min, not generators: they are slower)
            wanted = tuple(map(str.lower, names))
            first = min(map(index.get, wanted, repeat(_NOWHERE, len(wanted))))
            first = None if first == _NOWHERE else first
            whole_lines = not all(wanted) or ":" in "".join(wanted)
        if not whole_lines:
            if first is None:
                return None
            rest = self._rests[first]
            if rest[:1] != ":" or rest[1:2] in _AFTER_COLON:
                return first
        # An empty key, or one with a colon: key_value reads some lines so ('Key:x', 'Key:: x'),
        # and the first line whose text before the colon is a name may be one of them
        start = 0 if whole_lines else first + 1
        return next((i for i in range(start, len(self._keys)) if self._line(i)[0].lower() in wanted), None)

    def _make_index(self) -> dict[str, int]:
        layout = tuple(self._cut())
        index = self._memo.get(layout)  # (the GPU blocks of an output print the same lines)
        if index is None:
            keys = list(map(str.lower, map(str.rstrip, layout)))
            # reversed, so that the first child with a key is the one that stays
            index = self._memo[layout] = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
        self._index = index
        return index


def lazy_tree(text: str) -> LazyNode:
    """The root of `text`, as tree would read it. Only for ASCII text whose whitespace is ' '
    and '\\n' (where strip() is rstrip(' '))."""
    parts = _ROOT_RE.split("\n" + text)
    if parts[0].strip(" \n") or parts[2::3].count(None) != len(parts) // 3:
        raise _Irregular
    root = LazyNode("", None, -4, "", {})
    root._keys, root._rests = parts[1::3], parts[3::3]
    return root


def _lines_under(below: str, indent: int) -> tuple[list[str], list[str]]:
    """The text under a line cut at its children's lines, at ``indent``: each one's text up to
    its first colon, and what follows. _Irregular where the first line is further in (it would
    be a child too)."""
    if not below:
        return [], []  # most lines: nothing under them
    if indent > _LAZY_DEPTH:
        raise _Irregular
    parts = _level_re(indent).split(below)
    if parts[0].strip(" \n"):
        raise _Irregular
    return parts[1::2], parts[2::2]


def read_once(node: Node | LazyNode | None, read):
    """read(node), once per node: LazyNode gives a section that GPUs print alike as one node.
    Callers copy what is mutable (dicts), so that no two GPUs share one."""
    if node is None:
        return read(None)
    done = node._read
    if done is None:
        done = node._read = {}
    if read not in done:
        done[read] = read(node)
    return done[read]


# ASCII's whitespace besides ' ' and '\n' (tabs and '\r' are gone by then): LazyNode's regexes
# take only ' ' for whitespace, where str.strip() strips these too.
_OTHER_SPACE = "\x0b\x0c\x1c\x1d\x1e\x1f"


def read_tree(text: str, read: Callable[[Node | LazyNode], T]) -> T:
    """``read`` of the root of ``text``'s tree: lazily where nvidia-smi's indentation allows, else
    (and again, where a lazy node finds lines indented otherwise as it is read) ``tree``."""
    # the lines as tree reads them: split_lines' line ends (looked for first: a replace() that
    # finds nothing still takes 0.05 ms) and tabs at 4 columns, which restart at each newline
    below = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    if "\t" in below:
        below = below.expandtabs(4)
    if below.isascii() and not any(c in below for c in _OTHER_SPACE):
        try:
            return read(lazy_tree(below))
        except _Irregular:
            pass  # lines not indented as nvidia-smi indents them: tree reads them all
    return read(tree(split_lines(text)))
