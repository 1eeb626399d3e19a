"""`heliabuild docs [NAME]`: the user documentation installed with the package.

The Markdown files of the repository's `docs/` are package data of `heliabuild.docs` (pyproject.toml), so a
user who installed heliabuild with pip has every page a message or `--help` names (`docs/runner.md`):
`heliabuild docs` lists the pages and the folder they are in, `heliabuild docs runner` (or `runner.md`, or
`docs/runner.md`) prints one. An unknown name exits 2 naming the nearest pages.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from heliabuild.errors import HeliaError

PACKAGE = "heliabuild.docs"


def pages() -> dict[str, str]:
    """Page name (the file's stem) -> its first heading, for every installed page, sorted by name."""
    found = {}
    for entry in resources.files(PACKAGE).iterdir():
        if entry.name.endswith(".md"):
            first = entry.read_text(encoding="utf-8").partition("\n")[0]
            found[entry.name.removesuffix(".md")] = first.lstrip("# ").strip()
    return dict(sorted(found.items()))


def folder() -> str:
    """Where the pages are installed."""
    return str(resources.files(PACKAGE))


def page(name: str) -> str:
    """The text of the page `name` (`runner`, `runner.md` or `docs/runner.md`); HeliaError naming the nearest
    pages for another name."""
    stem = name.removeprefix("docs/").removesuffix(".md")
    known = pages()
    if stem not in known:
        import difflib

        close = difflib.get_close_matches(stem, list(known), n=2)
        mean = f"; did you mean {' or '.join(close)}?" if close else ""
        raise HeliaError(f"no documentation page {name!r}{mean}", hint=f"the pages are {', '.join(known)}")
    return resources.files(PACKAGE).joinpath(f"{stem}.md").read_text(encoding="utf-8")


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add `docs` to the `heliabuild` command's subcommands."""
    docs = commands.add_parser("docs", help="list the documentation installed with heliabuild, or print one page")
    docs.add_argument("name", nargs="?", metavar="NAME", help="a page: runner, docs/runner.md, ...")
    docs.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    if args.name is not None:
        sys.stdout.write(page(args.name))
        return 0
    listed = pages()
    width = max(len(name) for name in listed)
    lines = [f"heliabuild docs: the pages installed in {folder()}", ""]
    lines += [f"  {name.ljust(width)}  {title}" for name, title in listed.items()]
    lines += ["", "print one with: heliabuild docs NAME"]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
