"""The front door and the docs: every result in README and docs/ is its rendering from the
committed results files (results/*.json), every link, anchor, path and module the text names
exists, no commit hash stands in the prose, and README stays a front door."""

from __future__ import annotations

import pytest

from seq2seq.analysis.render import BLOCK, pages, render_text
from tests.helpers.references import (
    REPO,
    hex_words,
    link_resolves,
    markdown_links,
    module_mentions,
    module_resolves,
    path_mentions,
    path_resolves,
    text_files,
)


def test_every_rendered_block_is_its_rendering_from_the_results_files() -> None:
    stale = [
        str(page.relative_to(REPO))
        for page in pages()
        if render_text(text := page.read_text(encoding="utf-8")) != text
    ]
    assert stale == [], f"{stale}: run python scripts/render.py"


def test_a_number_typed_over_a_rendered_block_is_found() -> None:
    """The check above is not vacuous: README renders blocks, and changing one digit inside
    one of them makes the page differ from its rendering."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(BLOCK.finditer(text))
    body = block["body"]
    digit = next(i for i, c in enumerate(body) if c.isdigit())
    edited = body[:digit] + str((int(body[digit]) + 1) % 10) + body[digit + 1 :]
    planted = text.replace(body, edited, 1)
    assert render_text(planted) == text != planted


@pytest.mark.parametrize(
    ("find", "resolves", "what"),
    [
        (markdown_links, link_resolves, "relative links and anchors"),
        (path_mentions, path_resolves, "repository paths"),
        (module_mentions, module_resolves, "dotted module names"),
    ],
    ids=["links", "paths", "modules"],
)
def test_what_the_text_names_exists(find, resolves, what: str) -> None:
    broken = [
        str(reference)
        for path in text_files()
        if what != "relative links and anchors" or path.suffix == ".md"
        for reference in find(path)
        if not resolves(reference)
    ]
    assert broken == [], f"{what} that do not resolve:\n" + "\n".join(broken)


def test_no_commit_hash_in_the_prose() -> None:
    """History belongs to git: pages, configs, comments and docstrings name no commit."""
    found = [str(reference) for path in text_files() for reference in hex_words(path)]
    assert found == [], "commit-like words:\n" + "\n".join(found)


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    headings = [line for line in lines if line.startswith("## ")]
    for heading in ("## Quick start", "## Results"):
        assert heading in headings, heading
