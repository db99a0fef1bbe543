"""The docs' maps stay whole: docs/index.md names every page of docs/, and docs/cli.md every
verb, subcommand and option the command line has (read from the parsers themselves, as
`evalsite VERB --help` prints them). No database: the commands are built, never run."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from django.core.management import load_command_class

from evalsite.management.verbs import GROUPS, evalsite_verbs

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _options(parser: argparse.ArgumentParser, words: tuple[str, ...]):
    """(words, option) for each long option `--help` shows of `parser` and of its
    subcommands (Django's own, --verbosity and the like, are hidden from it)."""
    for action in parser._actions:  # argparse keeps no public list of its actions
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*words, name), None
                yield from _options(sub, (*words, name))
        for option in action.option_strings:
            shown = action.help != argparse.SUPPRESS
            if shown and option.startswith("--") and option != "--help":
                yield words, option


def test_the_index_names_every_page_of_the_docs():
    index = (DOCS / "index.md").read_text()
    linked = set(re.findall(r"\]\(([a-z-]+\.md)\)", index))
    assert {page.name for page in DOCS.glob("*.md")} - {"index.md"} == linked


def test_the_cli_page_names_every_verb_subcommand_and_option():
    page = (DOCS / "cli.md").read_text()
    verbs = evalsite_verbs()
    missing = []
    for verb in [verb for group in GROUPS.values() for verb in group]:
        parser = load_command_class(verbs[verb], verb).create_parser("evalsite", verb)
        if f"evalsite {verb}" not in page:
            missing.append(verb)
        for words, option in _options(parser, (verb,)):
            said = " ".join(("evalsite", *words))
            if option is None and said not in page:
                missing.append(said)
            if option is not None and f"{option}" not in page:
                missing.append(f"{said} {option}")
    assert missing == []
