"""The first sections of a report: header, calibration (first, on purpose) and win-rates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import (
    Block,
    Cell,
    Code,
    Context,
    Heading,
    Items,
    Para,
    Part,
    Section,
    Table,
)
from evalsite.core.report.judge_text import judge_figure_blocks
from evalsite.core.report.sent import sent_items
from evalsite.core.stats.multiple import comparisons_text

__all__ = [
    "calibration_section", "cost_text", "header_section", "uncalibrated_note", "win_rate_cell",
    "win_rates_section",
]  # fmt: skip

JUDGE_CATEGORIES = ("baseline", "candidate", "tie")
NO_LABELS = (
    "No labels yet: the judge has not been compared with people, so there is no kappa. "
    "Label pairs of this run to measure it."
)


NO_LOOK_LINE = "No-look run: no case data was kept (docs/no-look.md)"


def header_section(ctx: Context) -> Section:
    report, totals = ctx.report, ctx.get("totals")
    suite, prices = ctx.get("suite"), ctx.get("price_table")
    status: tuple[Any, ...] = ("Status: ", Code(report.get("status") or "unknown"))
    if report.get("detail"):
        status += (" \u2014 ", Code(report["detail"]))
    items: list[Cell] = [
        ("Suite: ", Code(suite.get("name") or ""), ", hash ", Code(suite.get("hash") or "")),
        status,
        ("Contestants: ", *_contestants(ctx)),
        ("Judge: ", *_judge(ctx)),
        *sent_items(report.get("sent") or {}),
        (
            "Price table: ",
            Code(prices.get("name") or ""),
            ", pinned ",
            Code(prices.get("pinned") or ""),
            "" if prices.get("verified") else " (UNVERIFIED)",
        ),
        f"Repeats: {num.count(report.get('repeats'))}",
        f"Answers: {num.count(totals.get('answers'))}; pairs: {num.count(totals.get('pairs'))}; "
        f"judge calls: {num.count(totals.get('judge_calls'))}",
        f"Calls: {num.count(totals.get('calls'))}; cache hits: "
        f"{num.count(totals.get('cache_hits'))}; cache hit rate: "
        f"{num.rate(totals.get('cache_hit_rate'))}",
        "Cost: " + cost_text(totals),
        *([NO_LOOK_LINE] if report.get("no_look") else []),
        (
            "Created: ",
            _when(report.get("created_at")),
            "; finished: ",
            _when(report.get("finished_at")),
        ),
    ]
    return Section("run", "Run", (Items(tuple(items)),))


def cost_text(totals: Mapping[str, Any]) -> str:
    """The cost line of SPEC §13, with what makes its figures not real money."""

    def usd(key: str) -> str:
        return num.money(totals.get(key), digits=4)

    text = (
        f"{usd('cost_usd')} this run (answers {usd('cost_answers_usd')}, judge "
        f"{usd('cost_judge_usd')}); if uncached {usd('cost_if_uncached_usd')}"
    )
    if totals.get("simulated"):
        text += " (simulated: fake provider)"
    if totals.get("cost_incomplete"):
        text += " - incomplete: some calls reported no usage"
    return text


def _contestants(ctx: Context) -> tuple[Any, ...]:
    parts: list[Any] = []
    for index, name in enumerate(ctx.contestants):
        parts += [", "] if index else []
        parts += [Code(name), " (baseline)"] if name == ctx.baseline else [Code(name)]
    return tuple(parts) or ("none",)


def _judge(ctx: Context) -> tuple[Any, ...]:
    judge = ctx.report.get("judge")
    if not judge:
        return ("none: no judge calls, no win-rates",)
    also = " (also a contestant)" if judge.get("is_contestant") else ""
    return (Code(judge.get("model") or ""), also)


def _when(value: str | None) -> Part:
    return Code(value) if value else num.MISSING


def calibration_section(ctx: Context) -> Section:
    cal = ctx.get("calibration")
    labels = cal.get("labels_used") or {}
    items: list[Cell] = [
        ("Gate: ", Code(cal.get("status") or "unknown"), " \u2014 ", Code(cal.get("reason") or "")),
        f"Headline eligible: {'true' if ctx.eligible else 'false'}",
        _kappa_line(cal),
        _floor_line(cal),
        f"Labels used: browser {num.count(labels.get('browser', 0))}, suite file "
        f"{num.count(labels.get('suite_file', 0))}, total {num.count(labels.get('total', 0))}; "
        f"stale {num.count(cal.get('labels_stale', 0))}; ignored (model pair not in the run) "
        f"{num.count(cal.get('labels_ignored', 0))}; without a majority "
        f"{num.count(cal.get('no_majority', 0))}" + _set_aside(cal),
    ]
    if cal.get("judge_config"):
        items.append(("Judge measured: ", Code(_judge_config(cal["judge_config"]))))
    if cal.get("repeats_rule"):
        items.append(
            f"Repeats: {num.count(cal.get('over_repeats', 0))} labels cover several repeats; "
            + cal["repeats_rule"]
        )
    if cal.get("labels_needed") is not None:
        items.append(
            f"Labels needed: {num.count(cal['labels_needed'])} more, at the current agreement, "
            "would bring the kappa interval's lower bound above the floor"
        )
    if cal.get("labels_for_half_width") is not None:
        items.append(
            f"Labels needed for an interval of \u00b1{_float(cal.get('half_width'), 2)}: "
            f"{num.count(cal['labels_for_half_width'])} in all, at the current agreement "
            f"(now {num.count(cal.get('n', 0))})"
        )
    blocks: list[Block] = [Items(tuple(items)), *_confusion(cal), *_per_task_kappa(cal)]
    blocks += _humans(cal.get("humans") or {})
    return Section("calibration", "Calibration", tuple(blocks))


def _kappa_line(cal: Mapping[str, Any]) -> str:
    if cal.get("status") == "no_labels":
        return NO_LABELS
    ci = _kappa_interval(cal)
    boot = num.interval(cal.get("kappa_ci_bootstrap"), 2) or "no interval"
    return (
        f"Kappa: {num.kappa(cal.get('kappa'), cal.get('kappa_band'))}, 95% interval {ci}, "
        f"{boot} (case bootstrap); agreement {num.rate(cal.get('agreement'))}; "
        f"n={num.count(cal.get('n', 0))} labels" + _weighted(cal)
    )


def _weighted(cal: Mapping[str, Any]) -> str:
    """Under active sampling: that kappa weights each label by 1/π, and what they are worth."""
    if not cal.get("kappa_weighted"):
        return ""
    worth = cal.get("kappa_n_effective")
    return ", each weighted by 1/\u03c0 (the queue's chance of asking for it)" + (
        f", worth {worth:.0f} unweighted" if worth is not None else ""
    )


def _kappa_interval(cal: Mapping[str, Any]) -> str:
    """Kappa's case interval (what the gate reads) with its cases, or why there is none."""
    ci = num.interval(cal.get("kappa_ci"), 2)
    cases = num.count(cal.get("kappa_cases", 0))
    if not ci:
        return f"none ({cal.get('kappa_ci_none') or 'no interval'})"
    return f"{ci} over {cases} cases"


def _floor_line(cal: Mapping[str, Any]) -> str:
    """The floor, with kappa's interval beside it: the gate reads both."""
    line = (
        f"Floor: kappa {_float(cal.get('min_kappa'), 2)} with at least "
        f"{num.count(cal.get('min_labels'))} labels"
    )
    if cal.get("min_kappa_lower_bound") is not None:
        line += f", interval's lower bound at least {_float(cal['min_kappa_lower_bound'], 2)}"
    if cal.get("status") == "no_labels":
        return line
    return line + f"; kappa's 95% interval {_kappa_interval(cal)}"


def _set_aside(cal: Mapping[str, Any]) -> str:
    """Labels a newer builder reports as kept out of kappa, when it reports them."""
    text = ""
    if cal.get("labels_targeted"):
        text += f"; targeted review (kept out) {num.count(cal['labels_targeted'])}"
    if cal.get("labels_on_excluded_pairs"):
        text += f"; on excluded pairs {num.count(cal['labels_on_excluded_pairs'])}"
    if cal.get("labels_not_in_run"):
        text += f"; case not in this run {num.count(cal['labels_not_in_run'])}"
    return text


def _judge_config(config: Mapping[str, Any]) -> str:
    return (
        f"{config.get('model')} (prompt {config.get('prompt', '')[:8]}, "
        f"rubric {config.get('rubric', '')[:8]})"
    )


def _float(value: float | None, digits: int) -> str:
    return num.MISSING if value is None else f"{value:.{digits}f}"


def _confusion(cal: Mapping[str, Any]) -> list[Block]:
    matrix = cal.get("confusion") or []
    if len(matrix) != 3 or any(len(row) != 3 for row in matrix):
        return []
    if not any(value for row in matrix for value in row):
        return []  # no labels: a matrix of zeros says nothing the kappa line does not
    head: tuple[Cell, ...] = ("human \u2193 / judge \u2192", *JUDGE_CATEGORIES)
    rows = tuple(
        (name, *(num.count(value) for value in row))
        for name, row in zip(JUDGE_CATEGORIES, matrix, strict=True)
    )
    return [Heading("Confusion matrix (rows human, columns judge)"), Table(head, rows)]


def _per_task_kappa(cal: Mapping[str, Any]) -> list[Block]:
    tasks = cal.get("per_task") or []
    if not tasks:
        return []
    floor = _float(cal.get("min_kappa"), 2)
    rows = tuple(
        (
            Code(row.get("task") or ""),
            num.cases(row, unit="labels"),
            "not shown (n below 5)"
            if row.get("low_n")
            else num.kappa(row.get("kappa"), row.get("band")),
            "" if row.get("low_n") else num.interval_or_reason(row, digits=2),
            num.rate(row.get("agreement")),
            _task_note(row, floor),
        )
        for row in tasks
    )
    head: tuple[Cell, ...] = ("task", "n", "kappa", "interval", "agreement", "note")
    family = cal.get("per_task_comparisons")
    heading = "Kappa per task"
    if family:
        heading += f" (below the floor of {floor}? {comparisons_text(family)})"
    return [Heading(heading), Table(head, rows)]


def _task_note(row: Mapping[str, Any], floor: str) -> str:
    """Whether a task's kappa is below the floor, decided after Holm's correction."""
    if row.get("low_n"):
        return "low n: agreement only"
    if row.get("below_floor"):
        return f"below the floor {floor}, Holm p={row['p_holm']:.3f}"
    if row.get("below_floor") is False and row.get("p_value", 1) < 0.5:
        return f"under {floor}, not significant after Holm, Holm p={row['p_holm']:.3f}"
    return ""


def _humans(humans: Mapping[str, Any]) -> list[Block]:
    heading = Heading("Human\u2013human agreement (the ceiling for the judge)")
    if not humans.get("n_items"):
        return [heading, Para("No pair was labelled by two or more people.")]
    items: list[Cell] = [
        ("Cohen's kappa ", Code(pair), f": {num.kappa(value)}")
        for pair, value in sorted((humans.get("pairwise") or {}).items())
    ]
    items += [
        f"Fleiss' kappa: {num.kappa(humans.get('fleiss_kappa'))}",
        f"Krippendorff's alpha: {num.kappa(humans.get('krippendorff_alpha'))}",
        f"Pairs labelled by two or more people: {num.count(humans.get('n_items'))}",
    ]
    return [heading, Items(tuple(items))]


def win_rate_cell(ctx: Context, value: float | None) -> str:
    """A win-rate as printed in any table: with its dagger when not headline-eligible."""
    return num.MISSING if value is None else num.rate(value) + ctx.dagger


def uncalibrated_note(ctx: Context) -> list[Block]:
    """The footnote under every table of win-rates, when they carry the dagger."""
    if ctx.eligible:
        return []
    cal = ctx.get("calibration")
    text = (
        "\u2020 UNCALIBRATED: calibration ",
        Code(cal.get("status") or "unknown"),
        " \u2014 ",
        Code(cal.get("reason") or ""),
        ". Not eligible as a headline.",
    )
    return [Para(text, note=True)]


def win_rates_section(ctx: Context) -> Section:
    if ctx.one_contestant:  # nothing was compared: nothing to flag
        return Section("win-rates", "Win-rates", (Para(ONE_CONTESTANT_TEXT),))
    title = "Win-rates" if ctx.eligible else "Win-rates \u2014 UNCALIBRATED"
    if not ctx.report.get("judge"):
        return Section("win-rates", title, (Para("No judge in this run: no win-rates."),))
    if not ctx.candidates:
        return Section("win-rates", title, (Para("No candidate has a win-rate."),))
    win_rates = ctx.get("win_rates")
    head: tuple[Cell, ...] = (
        "candidate", "vs", "win-rate", "interval", "n", "wins", "losses", "ties", "soft wins",
        "soft losses", "flips", "flip rate", "excluded", "schema-pass rate",
    )  # fmt: skip
    rows = tuple(_win_rate_row(ctx, name, win_rates[name]) for name in ctx.candidates)
    blocks: list[Block] = [
        Para(
            "Win-rates are over schema-passing pairs only, each pair judged in both orders: "
            "1 when both orders prefer the candidate, 0.5 for a tie or a flip."
        ),
        Table(head, rows),
        *_flip_and_exclusion_notes(ctx, win_rates),
        *judge_figure_blocks(ctx.report),
        *uncalibrated_note(ctx),
        *_bradley_terry(ctx),
    ]
    return Section("win-rates", title, tuple(blocks))


ONE_CONTESTANT_TEXT = (
    "One contestant: no pairs, so no win-rates; its checks and pass rates are below."
)


def _win_rate_row(ctx: Context, name: str, row: Mapping[str, Any]) -> tuple[Cell, ...]:
    interval = num.interval_or_reason(row)
    flip_rate = num.rate(row.get("flip_rate"))
    if row.get("flip_warning"):
        flip_rate += " \u2014 measures order, not quality"
    return (
        Code(name),
        Code(row.get("vs") or ctx.baseline),
        win_rate_cell(ctx, row.get("win_rate")),
        interval,
        num.cases(row),
        *(num.count(row.get(key, 0)) for key in ("wins", "losses", "ties")),
        *(num.count(row.get(key, 0)) for key in ("soft_wins", "soft_losses", "flips")),
        flip_rate,
        num.count(row.get("excluded", 0)),
        num.rate_n(row.get("schema_pass_rate"), row.get("schema_n")),
    )


def _flip_and_exclusion_notes(ctx: Context, win_rates: Mapping[str, Any]) -> list[Block]:
    items: list[Cell] = []
    for name in ctx.candidates:
        row = win_rates[name]
        if row.get("flip_warning"):
            items.append(
                (
                    "Flip rate ",
                    num.rate(row.get("flip_rate")),
                    " for ",
                    Code(name),
                    ": this win-rate measures order, not quality.",
                )
            )
        reasons = sorted((row.get("excluded_by_reason") or {}).items())
        if reasons:
            parts: list[Any] = ["Excluded for ", Code(name), ": "]
            for index, (reason, n) in enumerate(reasons):
                parts += [", " if index else "", Code(reason), f" {num.count(n)}"]
            items.append(tuple(parts))
    return [Items(tuple(items))] if items else []


def _bradley_terry(ctx: Context) -> list[Block]:
    ranking = ctx.report.get("bradley_terry")
    if not ranking:
        return []
    rows = tuple(
        (
            Code(row.get("contestant") or ""),
            f"{row.get('strength', 0):.3f}{ctx.dagger}",
            num.interval_or_reason(row),
            num.count(row.get("comparisons")),
            num.count(row.get("cases")),
        )
        for row in ranking
    )
    head: tuple[Cell, ...] = ("contestant", "log-strength", "interval", "comparisons", "cases")
    return [Heading("Bradley\u2013Terry ranking"), Table(head, rows)]
