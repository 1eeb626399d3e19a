"""A comparison (heliabuild.results.compare) for the terminal (`text`), as Markdown for a CI comment (`md`), or
as canonical JSON (`json`): its tables, estimates and measurements apart, then what the gate judged."""

from __future__ import annotations

from heliabuild.files import json_text
from heliabuild.results.compare import BUNDLE, FORMATS, OUTCOME, CompareError, Comparison
from heliabuild.results.figures import Figure
from heliabuild.tables import text_table


def _number(value: float | None, kind: str = "counter") -> str:
    if value is None:
        return "-"
    if kind == "counter" and float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"


def _signed(value: float | None, kind: str = "counter") -> str:
    if value is None:
        return "-"
    text = _number(value, kind)
    return text if text.startswith("-") else f"+{text}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def _spread(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    fraction = figure.spread_fraction
    share = "" if fraction is None else f" ({100 * fraction:.1f}%{' !' if figure.unsteady else ''})"
    return f"{_number(figure.spread, figure.kind)}{share}"


def _tables(comparison: Comparison) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table of the comparison, in order."""
    tables: list[tuple[str, list[str], list[list[str]]]] = []
    if comparison.options:
        tables.append(
            (
                "options that differ",
                ["option", "base", "new"],
                [[name, base or "-", new or "-"] for name, base, new in comparison.options],
            )
        )
    before, after = comparison.base.outcome, comparison.new.outcome
    if before or after:
        outcome = [[name, before.get(name, "-"), after.get(name, "-")] for name in OUTCOME]
        tables.append(("outputs and inputs", ["", "base", "new"], outcome))
    tables.append(
        (
            "estimates (Vela's estimated cycles, not measurements)",
            ["segment", "base", "new", "delta", "percent"],
            [
                [pair.name, _number(pair.base), _number(pair.new), _signed(pair.delta), _percent(pair.percent)]
                for pair in comparison.estimates
            ],
        )
    )
    if comparison.memory:
        tables.append(
            (
                "memory (Vela's allocation for the compiled model, KiB)",
                ["memory", "base", "new", "delta", "percent"],
                [
                    [
                        pair.name,
                        _number(pair.base, "float"),
                        _number(pair.new, "float"),
                        _signed(pair.delta, "float"),
                        _percent(pair.percent),
                    ]
                    for pair in comparison.memory
                ],
            )
        )
    if comparison.base.kind == BUNDLE:
        rows = []
        for pair, (_, base, new) in zip(comparison.measured_pairs(), comparison.measurements, strict=True):
            kind = (base or new).kind if (base or new) is not None else "float"
            rows.append(
                [
                    pair.name,
                    _number(pair.base, kind),
                    _number(pair.new, kind),
                    _signed(pair.delta, kind),
                    _percent(pair.percent),
                    _spread(base),
                    _spread(new),
                ]
            )
        tables.append(
            (
                "measurements (median of the samples; spread = max - min, ! above 10% of the median)",
                ["figure", "base median", "new median", "delta", "percent", "base spread", "new spread"],
                rows,
            )
        )
    return tables


def _verdict(comparison: Comparison) -> list[str]:
    """What the gate judged (heliabuild.results.gate): the rule, the figures reported but not gated and why,
    then the regressions, last."""
    if comparison.max_regression is None:
        return []
    limit = f"{comparison.max_regression:g}%"
    rule = "gate: Vela estimates and deterministic figures (QEMU instructions, FVP NPU cycles and beats)"
    if comparison.gate_noisy:
        rule += f"; noisy figures by a {100 * comparison.confidence:g}% bootstrap interval of the median ratio"
    lines = [rule]
    reported = [judgement for judgement in comparison.judgements if not judgement.gated]
    if reported:
        lines.append("not gated (reported only):")
        lines.extend(f"  {judgement.text()}" for judgement in reported)
    tested = [judgement for judgement in comparison.judgements if judgement.interval is not None]
    if tested:
        lines.append("noisy figures gated by the bootstrap test:")
        lines.extend(f"  {judgement.text()}" for judgement in tested)
    regressed = [judgement for judgement in comparison.judgements if judgement.regressed]
    if not regressed:
        lines.append(f"no figure regresses by more than {limit}")
        return lines
    lines.append(f"{len(regressed)} figure(s) regress by more than {limit}:")
    lines.extend(f"  {judgement.text()}" for judgement in regressed)
    return lines


def format_comparison(comparison: Comparison, fmt: str = "text") -> str:
    """The comparison for the terminal (`text`), as Markdown for a CI comment (`md`) or as canonical JSON
    (`json`); a figure a side lacks is `-` (null in JSON). CompareError for another format."""
    if fmt not in FORMATS:
        raise CompareError(f"compare --format: found {fmt!r}, expected one of {', '.join(FORMATS)}")
    if fmt == "json":
        return json_text(comparison.to_json())
    markdown = fmt == "md"
    lines = [
        f"{'## ' if markdown else ''}compare {comparison.base.path} -> {comparison.new.path}",
    ]
    for refusal in comparison.refusals:
        lines.append(f"{'> ' if markdown else ''}not comparable (forced): {refusal}")
    if comparison.layout is not None:
        lines.append(f"{'> ' if markdown else ''}{comparison.layout}")
    for title, header, rows in _tables(comparison):
        lines.append("")
        if markdown:
            lines.append(f"### {title}")
            lines.append("")
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "|".join("---" for _ in header) + "|")
            lines.extend("| " + " | ".join(row) + " |" for row in rows)
        else:
            lines.append(title)
            lines.extend(text_table(header, rows, indent="  ") if rows else ["  (none)"])
    verdict = _verdict(comparison)
    if verdict:
        lines.append("")
        lines.extend(f"- {line[2:]}" if markdown and line.startswith("  ") else line for line in verdict)
    return "\n".join(lines) + "\n"
