"""`evalcore score` and `evalcore compare`: thin wrappers over evalcore.scoring and evalcore.analysis.

Exit codes: 0 ok; 1 when `compare --fail-on-regression` fails: a gated metric regressed
significantly after Holm correction, or compared nothing / too little to tell (no question, or
fewer than --min-paired of them, with a value on both sides: evalcore.analysis.comparison.regression_gate);
1 also when a metric raised during `score` (its values are stored as NaN with the error as
reason); 2 for usage/data errors (EvalcoreError: an unknown metric or run, a non-finite threshold).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import typer

from evalcore.analysis.comparison.regression_gate import DEFAULT_MIN_PAIRED
from evalcore.cli.context import echo_line, state
from evalcore.cli.vocabulary import Engine, deprecated
from evalcore.errors import EvalcoreError


def _split(value: Optional[str]) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _fmt(x: object, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from evalcore.cli.context import print_table

    print_table(title, columns, rows)


def _options_from(path: Optional[str], pairs: list[str]) -> dict:
    """Scoring options from --options-file FILE and --option KEY=VALUE (these win), checked by name."""
    from evalcore.metrics.options import check_options, parse_option

    options: dict = {}
    if path:
        from evalcore.common.safe_yaml import read_settings

        if not Path(path).is_file():
            raise EvalcoreError(f"--options-file {path}: no such file")
        data = read_settings(Path(path))  # small bounds: options are small by nature
        options.update(check_options(data if data is not None else {}, f"--options-file {path}"))
    for text in pairs:
        key, value = parse_option(text)
        options[key] = value
    return check_options(options, "--option")


def score_cmd(
    run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help="Comma-separated metric names."),
    groups: Optional[str] = typer.Option(None, "--groups", help="Comma-separated metric groups."),
    group: Optional[str] = typer.Option(None, "--group", hidden=True, help="Old spelling of --groups."),
    judge: Optional[str] = typer.Option(None, "--judge", help="Judge, e.g. heuristic or anthropic:MODEL."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only estimate judge calls, tokens and cost."),
    spot_check: Optional[float] = typer.Option(None, "--spot-check", help="Re-judge this fraction (e.g. 0.1)."),
    second_judge: Optional[str] = typer.Option(None, "--second-judge", help="Judge for --spot-check."),
    embedding_model: Optional[str] = typer.Option(None, "--embedding-model", help="Embedding model name."),
    bertscore_model: Optional[str] = typer.Option(
        None, "--bertscore-model", help="Local model (path or name) for BERTScore; default: the packaged MiniLM."),
    bertscore_layer: Optional[int] = typer.Option(None, "--bertscore-layer", help="Hidden layer for BERTScore."),
    bertscore_idf: bool = typer.Option(False, "--bertscore-idf", help="Weight BERTScore tokens by idf."),
    bertscore_rescale: bool = typer.Option(False, "--bertscore-rescale",
                                           help="Rescale BERTScore with the model's baseline."),
    options_file: Optional[str] = typer.Option(
        None, "--options-file", help="YAML/JSON file of scoring options (phrase lists, negative_rules, "
                                     "match_snippets, weights, budgets...; see docs/metrics)."),
    options_old: Optional[str] = typer.Option(None, "--options", hidden=True, help="Old spelling of --options-file."),
    option: Optional[list[str]] = typer.Option(
        None, "--option", help="One scoring option as KEY=VALUE (VALUE is YAML); repeatable; wins over "
                               "--options-file."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show a progress bar."),
    engine: Engine = typer.Option(Engine.local, "--engine", help="local (this process) or ray (a Ray Data "
                                  "pipeline; needs evalcore[scale]). Same values either way."),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: the Ray cluster to use "
                                          "(e.g. ray://head:10001 or auto); default: start a local instance."),
    workers: Optional[int] = typer.Option(None, "--workers", help="With --engine ray: scoring actors "
                                          "(default: one per CPU of the cluster, one per GPU for embeddings)."),
    judge_rpm: Optional[float] = typer.Option(None, "--judge-rpm", help="With --engine ray: judge requests "
                                              "started per minute, cluster-wide (default: no rate limit)."),
    repeats: Optional[int] = typer.Option(None, "--repeats", metavar="K",
                                          help="Ask each judged metric's verdict K times per answer (independent "
                                               "samples; the value is their mean, each is stored). Default 1."),
) -> None:
    """Compute metric values for every answer of a run and store them (re-scoring replaces).

    Without --metrics/--groups: every metric that needs neither a judge nor embeddings and can
    run on what the run holds. Add --groups semantic for embedding metrics, --judge J for the
    LLM-judged ones (use --dry-run first to see calls, tokens and cost).
    """
    from evalcore.scoring.engine import score_run

    groups = deprecated(groups, group, "--group", "--groups")
    options_file = deprecated(options_file, options_old, "--options", "--options-file")
    engine = engine.value
    _check_flags(spot_check, second_judge, engine, address or workers or judge_rpm)
    options = _options_from(options_file, option or [])
    flags = {"judge": judge, "embedding_model": embedding_model, "bertscore_model": bertscore_model,
             "bertscore_layer": bertscore_layer, "bertscore_idf": bertscore_idf or None,
             "bertscore_rescale": bertscore_rescale or None, "judge_repeats": repeats}
    options.update({key: value for key, value in flags.items() if value not in (None, "")})  # flags win
    options = check_repeat_option(options) if repeats is not None else options
    options["progress"] = not no_progress
    store = state.store(changing=not dry_run)
    if engine == "ray" and not dry_run:  # a dry run computes nothing: the local estimate is the same
        from evalcore.scale.ray_scoring import score_run_ray

        report = score_run_ray(store, run, metrics=_split(metrics), groups=_split(groups), options=options,
                               address=address, workers=workers, judge_per_minute=judge_rpm)
    else:
        report = score_run(store, run, metrics=_split(metrics), groups=_split(groups), options=options,
                           dry_run=dry_run, progress=not no_progress)
    if dry_run:
        est = report.estimate or {}
        typer.echo(json.dumps({"run_id": report.run_id, "metrics": report.metrics, **est}, indent=2,
                              ensure_ascii=False, default=str))
        return
    _print_means(store, report)
    _print_problems(report)
    if spot_check is not None:
        _spot_check(store, report.run_id, spot_check, second_judge, judge)
    if report.errors:
        typer.echo(f"{len(report.errors)} metric(s) raised an error; their values are stored as NaN with the "
                   "error as the reason. Fix the cause and score them again.", err=True)
        raise typer.Exit(code=1)


def _print_json(store: Any, result: Any, record: dict, gate: Any, front: Any, corrected: Any, seed: int) -> None:
    """`compare --json`: the comparison record (`evalcore report` embeds the same), the gate's
    findings, and the Pareto front and the corrected rows when asked for (`corrected`: the
    metrics named, None for every labelled one, False when not asked)."""
    out = record
    if front is not None:
        out["pareto"] = {"points": json.loads(front[0].to_json(orient="records", double_precision=15)),
                         "dropped_axes": front[1]}
    out["regressions"] = gate.regressions
    out["not_compared"] = gate.not_compared
    if corrected is not False:
        from evalcore.cli.corrected_commands import corrected_table

        from evalcore.cli.preference_output import preference_json

        table = corrected_table(store, result, record, corrected, seed)
        out["corrected"] = json.loads(table.to_json(orient="records", double_precision=15, force_ascii=False))
        out["corrected_win_rate"] = preference_json(store, result)  # pairwise preferences
    typer.echo(json.dumps(out, indent=2, ensure_ascii=False, default=str))


def _check_flags(spot_check: float | None, second_judge: str | None, engine: str, ray_flags: Any) -> None:
    """The flags that only make sense together, refused before anything is read."""
    if spot_check is not None and not (0 < spot_check <= 1):
        raise EvalcoreError("--spot-check takes a fraction in (0, 1], e.g. 0.1")
    if spot_check is not None and not second_judge:
        raise EvalcoreError("--spot-check needs --second-judge")
    if engine == "local" and ray_flags:
        raise EvalcoreError("--address, --workers and --judge-rpm need --engine ray")


def _print_problems(report: Any) -> None:
    """The metrics skipped (one line) and those that raised (one line each), on stderr."""
    skipped = skipped_line(report.skipped)
    if skipped:
        typer.echo(skipped, err=True)
    for name, msg in sorted(report.errors.items()):
        echo_line(f"ERROR in {name}: {msg}", err=True)


def _spot_check(store: Any, run_id: str, fraction: float, second_judge: str | None, judge: str | None) -> None:
    """`--spot-check`: re-judge a sample with the second judge and print the disagreement."""
    try:
        from evalcore.scoring.spot_check import spot_check as run_spot_check
    except ImportError as exc:
        raise EvalcoreError(f"--spot-check is not available in this build (evalcore.scoring.spot_check: {exc})") from exc
    result = run_spot_check(store, run_id, fraction=fraction, second_judge=second_judge, first_judge=judge, seed=0)
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False, default=str))


def check_repeat_option(options: dict) -> dict:
    """`--repeats K` checked as the option `judge_repeats` is (one error line naming the value)."""
    from evalcore.metrics.options import check_options

    return check_options(options, "--repeats")


def skipped_line(skipped: dict[str, str]) -> str:
    """All skipped metrics in one line, grouped by reason, most frequent first:
    "58 skipped: needs a judge (--judge) (40), run has no citations (12); see ..."."""
    if not skipped:
        return ""
    counts: dict[str, int] = {}
    for why in skipped.values():
        counts[why] = counts.get(why, 0) + 1
    reasons = ", ".join(f"{why} ({n})" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{len(skipped)} skipped: {reasons}; see `evalcore metrics --needs NAME` for what each input enables"


def _print_means(store, report) -> None:
    """The scored metrics' means per method (never pooled across methods: a pooled mean
    describes no system), from the run's summary as `evalcore show` reads it."""
    from evalcore.analysis.runs.means import metric_table

    table = metric_table(store, report.run_id)
    table = table[table["metric"].isin(report.metrics)]
    methods = sorted(table["method"].unique())
    rows = []
    for name in report.metrics:
        part = table[table["metric"] == name].set_index("method")
        if part.empty:
            continue
        cells = [f"{_fmt(part.at[m, 'mean'])} ({int(part.at[m, 'n_scored'])}/{int(part.at[m, 'n'])})"
                 if m in part.index else "-" for m in methods]
        reasons = "; ".join(dict.fromkeys(r for r in part["not_scored_reasons"] if isinstance(r, str) and r))
        rows.append([name, *cells, reasons[:120]])
    _print_table(f"run {report.run_id}: {report.n_values} values in {report.seconds:.1f}s "
                 "(mean per method, scored/answers)", ["metric", *methods, "not scored because"], rows)


def compare_cmd(
    selections: list[str] = typer.Argument(..., help="RUN[:METHOD] ... (first = baseline)."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", "-m", help="Comma-separated metrics to test (default: the key metrics scored on both sides, "
                                "the Compare page's default set)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    markdown: bool = typer.Option(False, "--markdown",
                                  help="Print a Markdown report (for a pull request or $GITHUB_STEP_SUMMARY)."),
    show_pareto: bool = typer.Option(False, "--pareto", help="Also show the quality/cost/latency Pareto front."),
    fail_on_regression: Optional[list[str]] = typer.Option(
        None, "--fail-on-regression", help="METRIC[:MIN_DELTA]; exit 1 if it regresses significantly (Holm), "
                                           "or if it could not be compared (see --min-paired)."),
    # the two numbers as text: read by the gate's own rule (plain decimal notation only; a
    # float option would take "0_9" and full-width digits), evalcore.analysis.comparison.regression_gate
    min_paired: str = typer.Option(
        str(DEFAULT_MIN_PAIRED), "--min-paired", metavar="SHARE",
        help="With --fail-on-regression: the share of the questions with a value on either side that must have "
             "one on both; fewer fails."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed for bootstrap and randomization."),
    alpha: str = typer.Option("0.05", "--alpha", metavar="LEVEL", help="Significance level after Holm correction, "
                                                                        "in (0, 1)."),
    corrected: bool = typer.Option(False, "--corrected",
                                   help="Also judge Δ vs human-corrected Δ from randomly sampled labels."),
    aa: bool = typer.Option(False, "--aa", help="A/A check: each system against its own re-judging (the two "
                                                "halves of its `score --repeats K` verdicts): the Δ judge noise "
                                                "alone produces."),
) -> None:
    """Compare methods/runs paired on question_id: Δ, CI, p (Holm-adjusted), win/loss counts."""
    from evalcore.analysis.comparison.compare import compare, parse_selections, pareto
    from evalcore.analysis.comparison.regression_gate import check_alpha, check_min_paired, gate_result, parse_gate
    from evalcore.analysis.report.report_data import comparison_record, short_names
    from evalcore.analysis.comparison.verdict import default_tested_metrics

    gates = [parse_gate(g) for g in fail_on_regression or []]  # refused before anything is read
    level, share = check_alpha(alpha), check_min_paired(min_paired)
    store = state.store()
    if aa:
        _aa(store, selections, _split(metrics), seed, level, as_json, bool(gates or markdown or show_pareto or corrected))
        return
    sels = parse_selections(store, selections)
    wanted = _split(metrics) or default_tested_metrics(store, [x.label for x in sels])
    wanted = list(dict.fromkeys(wanted + [g.metric for g in gates]))
    result = compare(store, sels, metrics=wanted, seed=seed, alpha=level, gated=[g.metric for g in gates])
    one_run = len({x.run_id for x in sels}) == 1
    short = short_names(sels)
    record = comparison_record(store, result, short)  # `evalcore report` embeds the same
    gate = gate_result(result, gates, share)  # regressions, and gated metrics compared on too little
    failures = gate.regressions
    front = pareto(result) if show_pareto else None
    if as_json:
        _print_json(store, result, record, gate, front, _split(metrics) or None if corrected else False, seed)
    elif markdown:
        from evalcore.outputs.markdown_report import comparison_markdown

        typer.echo(comparison_markdown(result, {x.label: x.method for x in sels} if one_run else None), nl=False)
    else:
        _print_comparison(result, record, short, one_run)
        if record.get("judge_noise"):
            from evalcore.cli.judge_noise_output import print_comparison_noise

            print_comparison_noise(record["judge_noise"], short)
        if record.get("trials"):
            from evalcore.cli.trial_output import print_comparison_trials

            print_comparison_trials(record["trials"], short)
        if front is not None:
            _print_pareto(front, short)
        if corrected:
            _print_corrected(store, result, record, _split(metrics) or None, seed)
    for line in gate.not_compared:
        typer.echo(f"NOT COMPARED {line}", err=True)
    if gate.failed:
        for f in failures:
            echo_line(f"REGRESSION {f}", err=True)
        raise typer.Exit(code=1)


def _print_corrected(store, result, record: dict, metrics: list[str] | None, seed: int) -> None:
    """`compare --corrected`: each Δ beside its human-corrected Δ, then the corrected win rate
    where the compared pairs hold preference labels."""
    from evalcore.cli.corrected_commands import print_corrected_compare
    from evalcore.cli.preference_output import print_preferences

    print_corrected_compare(store, result, record, metrics, seed)
    print_preferences(store, result)


def _aa(store, selections: list[str], metrics: list[str], seed: int, alpha: float, as_json: bool,
        other_modes: bool) -> None:
    """`compare RUN RUN --aa` (evalcore.cli.judge_noise_output.print_aa); it compares nothing else."""
    from evalcore.cli.judge_noise_output import print_aa

    if other_modes:
        raise EvalcoreError("--aa compares each system with itself; it takes no --fail-on-regression, --markdown, "
                            "--pareto or --corrected")
    print_aa(store, selections, metrics or None, seed, alpha, as_json)


def _print_comparison(result, record: dict, short: dict[str, str], one_run: bool) -> None:
    """The terminal's comparison: per candidate its warnings, headline and one sentence per
    tested metric (the Compare page's words, the judge of a judged metric included: both print
    verdict.pair_verdict's lines), then one table row per (candidate, metric) with its verdict
    outcome ("not compared" on 0 pairs), then the unpaired."""
    for v in record["verdicts"].values():  # the verdict first: what a reader came for
        for warning in v["warnings"]:
            echo_line(f"WARNING not comparable as scored: {warning}")
        echo_line(v["summary"])
        for line in v["lines"]:
            echo_line(f"  {line['verdict']}")
    outcome = {(row["candidate"], row["metric"]): row["outcome"] for row in record["metrics"]}
    rows = [[short[r.candidate], r.metric, _fmt(r.mean_a), _fmt(r.mean_b), _fmt(r.delta, 4),
             f"[{_fmt(r.ci_low, 4)}, {_fmt(r.ci_high, 4)}]", _fmt(r.p_holm, 4) + (" *" if r.significant else ""),
             f"{r.improved}/{r.regressed}/{r.unchanged}/{r.missing}", str(r.n_pairs),
             outcome.get((r.candidate, r.metric)) or ""] for r in result.table.itertuples()]
    _print_table(f"baseline {result.baseline.label}" + (" (candidates: methods of the same run)" if one_run else ""),
                 ["candidate", "metric", "baseline", "candidate", "Δ", "95% CI", "p (Holm)",
                  "better/worse/same/missing", "n", "verdict"], rows)
    for label, ids in result.unpaired.items():
        if ids["only_in_baseline"] or ids["only_in_candidate"]:
            echo_line(f"{label}: unpaired questions: {len(ids['only_in_baseline'])} only in baseline, "
                      f"{len(ids['only_in_candidate'])} only in candidate", err=True)


def _print_pareto(front, short: dict[str, str]) -> None:
    df, dropped = front
    _print_table("Pareto front (quality ↑, cost ↓, latency ↓)",
                 ["selection", "quality", "cost", "latency p50", "on front", "dominated by"],
                 [[short.get(p.label, p.label), _fmt(p.quality), _fmt(p.cost, 6), _fmt(p.latency, 1), str(p.on_front),
                   p.dominated_by] for p in df.itertuples()])
    if dropped:
        echo_line(f"Pareto axes dropped (missing values): {', '.join(dropped)}", err=True)


def register(app: typer.Typer) -> None:
    app.command("score")(score_cmd)
    app.command("compare")(compare_cmd)
