"""Render README's and docs' results from the committed results files:
``python scripts/render.py`` rewrites every ``<!-- results: NAME -->`` block of README.md and
docs/*.md and the comparison's figures in docs/; ``--check`` changes nothing and fails,
naming the pages, where a page differs from its rendering (seq2seq/analysis/render.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seq2seq.errors import UserError, exit_on_user_error


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail where a page differs from its rendering"
    )
    args = parser.parse_args(argv)
    from seq2seq.analysis.render import REPOSITORY, render_pages, stale_pages

    if args.check:
        stale = stale_pages()
        if stale:
            names = ", ".join(str(p.relative_to(REPOSITORY)) for p in stale)
            raise UserError(f"{names} differ from the results files; run python scripts/render.py")
        print("every rendered block is up to date")
        return
    for page in render_pages():
        print(f"rendered {page.relative_to(REPOSITORY)}")


if __name__ == "__main__":
    main()
