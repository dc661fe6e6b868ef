"""What the project's text points at, found and checked: relative Markdown links and their
``#anchors``, repository paths (``seq2seq/launch/run_folder.py``, ``training/run.py``,
``conf/config.yaml``), dotted module names (``seq2seq.evaluation.scoring.decode_shard``) and
commit-like hex words, in README, docs/, conf/, notebooks' sources and every module's and
test's docstrings and comments."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, is_dataclass
from pathlib import Path

from tests.helpers.runs import REPO

#: The folders whose names start a repository path in prose.
TOP_FOLDERS = ("seq2seq", "scripts", "tests", "docs", "conf", "data", "notebooks", "results",
               ".ci")  # fmt: skip
#: The package's rooms: ``training/run.py`` in prose means ``seq2seq/training/run.py``.
ROOMS = tuple(p.name for p in (REPO / "seq2seq").iterdir() if p.is_dir() and p.name[0] != "_")

MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH = re.compile(
    r"(?<![\w./-])((?:"
    + "|".join(re.escape(f) for f in (*TOP_FOLDERS, *ROOMS))
    + r")/[\w./-]*[\w/])"
)
MODULE = re.compile(r"(?<![\w./-])(seq2seq(?:\.\w+)+)")
HEX = re.compile(r"(?<![\w-])[0-9a-f]{7,40}(?![\w-])")


@dataclass(frozen=True)
class Reference:
    """One thing a file points at, where it says so."""

    file: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}: {self.target}"


def text_files() -> list[Path]:
    """The files whose text is checked: pages, configs, notebook sources, code and tests."""
    files = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "conf").rglob("*.yaml")]
    files += [REPO / "notebooks" / "attention.py", REPO / "notebooks" / "README.md"]
    files += [*(REPO / "seq2seq").rglob("*.py"), *(REPO / "scripts").glob("*"),
              *(REPO / "tests").rglob("*.py")]  # fmt: skip
    return sorted(f for f in files if f.is_file() and "fixtures" not in f.parts)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The prose of a file, line by line: a page or a config whole; of Python code its
    comments and docstrings (its strings are data, e.g. a test's made-up paths)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py" and not text.startswith("#!/usr/bin/env python"):
        yield from enumerate(text.splitlines(), start=1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body or not isinstance(body[0], ast.Expr):
            continue
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for offset, line in enumerate(value.value.splitlines()):
                yield value.lineno + offset, line


def markdown_links(path: Path) -> Iterator[Reference]:
    for number, line in _lines(path):
        for target in MARKDOWN_LINK.findall(line):
            if not re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                yield Reference(path, number, target)


def path_mentions(path: Path) -> Iterator[Reference]:
    for number, line in _lines(path):
        for target in PATH.findall(line):
            yield Reference(path, number, target)


def module_mentions(path: Path) -> Iterator[Reference]:
    for number, line in _lines(path):
        for target in MODULE.findall(line):
            yield Reference(path, number, target)


def hex_words(path: Path) -> Iterator[Reference]:
    for number, line in _lines(path):
        for word in HEX.findall(line):
            if re.search(r"[a-f]", word) and re.search(r"\d", word):  # not "deadbeef", "1234567"
                yield Reference(path, number, word)


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(m) for m in re.findall(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), re.M)}


def link_resolves(reference: Reference) -> bool:
    """A relative link names an existing file (from the linking page), its anchor a heading."""
    target, _, fragment = reference.target.partition("#")
    page = (reference.file.parent / target).resolve() if target else reference.file
    if not page.exists():
        return False
    return not fragment or page.suffix != ".md" or fragment in anchors(page)


#: Paths a run makes, not the repository: the synthetic corpora's folders.
MADE_AT_RUN_TIME = ("data/synthetic/",)


def path_resolves(reference: Reference) -> bool:
    """A repository path exists: as written from the root, or under seq2seq/ (a room's path),
    with or without ``.py``; a trailing ``.`` or ``/`` of prose is dropped."""
    target = reference.target.rstrip("./")
    if reference.target.startswith(MADE_AT_RUN_TIME):
        return True
    bases = [REPO, REPO / "seq2seq"] if target.split("/")[0] in ROOMS else [REPO]
    return any(
        (base / candidate).exists() for base in bases for candidate in (target, f"{target}.py")
    )


def module_resolves(reference: Reference) -> bool:
    """A dotted name: its longest importable module prefix, then attributes (a dataclass's
    fields too)."""
    parts = reference.target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            fields = {f.name for f in dataclasses.fields(found)} if is_dataclass(found) else set()
            if not hasattr(found, name) and name not in fields:
                return False
            found = getattr(found, name, None)
        return True
    return False
