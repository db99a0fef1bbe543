"""The starter suite `evalsite init` writes: its answers checked, the defaults it offers,
and its two files rendered from the templates in ``evalsite/data/starter/``.

The templates are YAML text with three small devices, so that one file holds every mode:
``[[name]]`` is replaced by a value; a line ``[[if flag]]`` or ``[[if not flag]]`` up to
``[[end]]`` keeps its lines only when the flag is (or is not) set; and ``[[on flag]]`` up
to ``[[end]]`` keeps its lines as written when the flag is set and comments them out
(``# `` after their indentation) when it is not, so the suite shows the parts a mode leaves
out as YAML a reader can switch on by removing the ``# ``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

from evalsite.core.pricing import UNPRICED_PROVIDERS, PriceRow
from evalsite.core.suite_schema import IDENTIFIER

# Providers never offered as a default: they answer without being a model anyone ships.
NOT_OFFERED = UNPRICED_PROVIDERS | {"fake"}
SUITE_FILE = "evalsite.yaml"
FALLBACK_NAME = "my-suite"

_PLACEHOLDER = re.compile(r"\[\[([a-z_]+)\]\]")
_DIRECTIVE = re.compile(r"\[\[(if|if not|on) ([a-z_]+)\]\]|\[\[(end)\]\]")
_PROSE = re.compile(r" *# \S.*")  # a comment line of prose (code in a comment is indented)
_PLAIN = re.compile(r"[A-Za-z0-9._/@-]+")


class StarterError(ValueError):
    """An answer the starter cannot use; the message says what is wrong with it."""


class Judging(enum.StrEnum):
    """How the starter's answers are judged."""

    CHECKS = "checks"
    JUDGE = "judge"
    BOTH = "both"

    @property
    def checks(self) -> bool:
        return self is not Judging.JUDGE

    @property
    def judge(self) -> bool:
        return self is not Judging.CHECKS


@dataclass(frozen=True)
class Starter:
    """Everything the two files depend on."""

    name: str
    judging: Judging
    models: tuple[str, ...]
    judge_model: str
    judge_note: str
    max_cost: Decimal = Decimal("0.50")


def suite_name(text: str) -> str:
    """`text` as a suite name, or StarterError saying what a name must be."""
    name = text.strip()
    if not re.fullmatch(IDENTIFIER, name):
        raise StarterError(
            f"{name!r} is not a suite name: use lowercase letters, digits and '-', starting "
            "with a letter or digit, at most 64 characters (e.g. support-replies)"
        )
    return name


def judging(text: str) -> Judging:
    """`checks`, `judge` or `both` (or a prefix of one); StarterError otherwise."""
    word = text.strip().lower()
    found = [mode for mode in Judging if word and mode.value.startswith(word)]
    if len(found) != 1:
        raise StarterError(f"{text.strip()!r} is not one of checks, judge, both")
    return found[0]


def model_list(text: str, mode: Judging) -> tuple[str, ...]:
    """The comma-separated models of `text`; StarterError for none, a repeat, or a single
    model when a pairwise judge needs two."""
    models = tuple(part.strip() for part in text.split(",") if part.strip())
    if not models:
        raise StarterError("give at least one model, e.g. openai/gpt-4o-mini")
    repeated = sorted({model for model in models if models.count(model) > 1})
    if repeated:
        raise StarterError(f"{', '.join(repeated)} is listed twice")
    if mode.judge and len(models) < 2:
        raise StarterError(
            "a pairwise judge compares two or more models: give a second one, or choose checks"
        )
    return models


def default_name(path: Path) -> str:
    """The file's stem, or its folder's name for ``evalsite.yaml``, made into a suite name."""
    stem = path.stem if path.name != SUITE_FILE else path.resolve().parent.name
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:64].strip("-")
    return name or FALLBACK_NAME


def default_models(rows: Iterable[PriceRow]) -> tuple[str, ...]:
    """The cheapest model of each of the two providers whose cheapest models cost least
    (input plus output price), fake, scripted and command rows left out."""
    cheapest: dict[str, PriceRow] = {}
    for row in sorted(_offered(rows), key=_price):
        cheapest.setdefault(row.provider, row)
    return tuple(row.model for row in list(cheapest.values())[:2])


def default_judge(models: Sequence[str], rows: Iterable[PriceRow]) -> tuple[str, str]:
    """The judge offered for `models`, and a comment line saying why it was picked."""
    offered = sorted(_offered(rows), key=_price)
    used = {model.split("/", 1)[0] for model in models}
    unused = [row for row in offered if row.provider not in used]
    if unused:
        reason = (
            "the cheapest priced model from a provider none of the contestants use, since a "
            "judge tends to favour answers like its own"
        )
        return unused[0].model, _note(unused[0].model, reason)
    others = [row for row in offered if row.model not in models]
    if others:
        return others[0].model, _note(others[0].model, "the cheapest priced non-contestant")
    return models[0], _note(models[0], "the baseline, as no other model is priced")


def capped(chosen: Starter, estimate: Decimal) -> Starter:
    """`chosen` with a cap its run fits under: $0.50, or the first of 1, 2, 5, 10, 20, 50…
    dollars at or above the estimate (a starter must run as written, --fake included, and a
    fake run is priced at the real models' rows)."""
    cap, scale = Decimal("0.50"), Decimal(1)
    while cap < estimate:
        cap = next((step * scale for step in (1, 2, 5) if step * scale >= estimate), 5 * scale)
        scale *= 10
    return replace(chosen, max_cost=cap)


def render_suite(starter: Starter, suite_file: str, replies_file: str, keys: Sequence[str]) -> str:
    """The starter suite's text. `keys`: the environment variables a real run needs."""
    mode = starter.judging
    label_candidate = starter.models[1] if len(starter.models) > 1 else starter.judge_model
    values = {
        **_shared(starter, suite_file),
        "replies_file": replies_file,
        "models": _flow(starter.models),
        "keys": _and(keys),
        "judge_model": starter.judge_model,
        "max_cost": f"{starter.max_cost:.2f}",
        "judge_note": starter.judge_note,
        "judge_and": " and the judge" if mode.judge else "",
        "judge_verdicts": ", and the judge's verdicts under `judge`" if mode.judge else "",
        "schema_judging": (
            ": its pair is left out of judging (counted as excluded), not scored as a loss"
            if mode.judge
            else ", and the answer counts as failed"
        ),
        "label_baseline": starter.models[0],
        "label_candidate": label_candidate,
    }
    flags = {
        "checks": mode.checks,
        "judge": mode.judge,
        "keys": bool(keys),
        "label_example": label_candidate != starter.models[0],
    }
    return render(_template("suite.yaml"), values, flags)


def render_replies(starter: Starter, suite_file: str) -> str:
    """The scripted replies file for the starter suite."""
    flags = {"judge": starter.judging.judge}
    return render(_template("replies.yaml"), _shared(starter, suite_file), flags)


def render(template: str, values: Mapping[str, str], flags: Mapping[str, bool]) -> str:
    """`template` with its placeholders and blocks resolved (see the module docstring);
    KeyError for a placeholder or flag it is not given, ValueError for an unclosed block.
    A silenced line is commented out at its block's directive's indentation, and a prose
    comment line that a value made longer than WIDTH is wrapped."""
    out: list[str] = []
    stack: list[tuple[str, bool, int]] = []  # (how, flag is set, indentation) of each block
    for line in template.splitlines():
        directive = _DIRECTIVE.fullmatch(line.strip())
        if directive and directive[3]:
            stack.pop()
        elif directive:
            stack.append((directive[1], flags[directive[2]], _indent(line)))
        elif _kept(stack):
            text = _PLACEHOLDER.sub(lambda match: values[match[1]], line)
            if text != line and len(text) > WIDTH and _PROSE.fullmatch(text):
                text = _wrapped(text)
            silenced = [indent for how, on, indent in stack if how == "on" and not on]
            out.append(_commented(text, silenced[0]) if silenced and text.strip() else text)
    if stack:
        raise ValueError(f"unclosed [[{stack[-1][0]} …]] block")
    return "\n".join(out) + "\n"


WIDTH = 90


def _kept(stack: list[tuple[str, bool, int]]) -> bool:
    return all(on if how == "if" else not on for how, on, _ in stack if how != "on")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _commented(line: str, column: int) -> str:
    return f"{line[:column]}# {line[column:]}"


def _wrapped(line: str) -> str:
    """A comment line as comment lines of at most WIDTH characters, at its indentation."""
    lead = line[: _indent(line)] + "# "
    lines, current = [], ""
    for word in line.strip().removeprefix("#").split():
        if current and len(lead) + len(current) + 1 + len(word) > WIDTH:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return "\n".join(lead + text for text in [*lines, current])


def _shared(starter: Starter, suite_file: str) -> dict[str, str]:
    flag = " --judge scripted/judge" if starter.judging.judge else ""
    return {"name": starter.name, "suite_file": suite_file, "judge_flag": flag}


def _template(name: str) -> str:
    return resources.files("evalsite.data").joinpath("starter", name).read_text("utf-8")


def _offered(rows: Iterable[PriceRow]) -> list[PriceRow]:
    return [row for row in rows if row.provider not in NOT_OFFERED and not row.legacy]


def _price(row: PriceRow) -> tuple[Any, ...]:
    return (row.input_per_mtok + row.output_per_mtok, row.model)


def _note(model: str, reason: str) -> str:
    return f"evalsite init picked {model} as the judge: {reason}."


def _flow(items: Sequence[str]) -> str:
    """A YAML flow list of model strings, quoting any that is not plain."""
    return "[" + ", ".join(i if _PLAIN.fullmatch(i) else _quoted(i) for i in items) + "]"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _and(names: Sequence[str]) -> str:
    if not names:
        return ""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
