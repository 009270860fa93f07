"""pytest integration: a live RAG evaluation as a CI quality gate.

Enable with `-p evalcore.cli.pytest_plugin` (or the `pytest11` entry point). Options are `evalcore
run`'s, prefixed with `eval-` (pytest's options share one namespace):
  --run-eval            actually run; without it, tests using the `rag_eval` fixture or the
                        `rag_eval` marker are skipped (a normal `pytest` never needs a server)
  --eval-config FILE    an eval config (targets, methods, dataset, thresholds, baseline)
  --eval-target URL     the server (overrides the config's target; alone it uses evalcore's
                        default contract and, without --eval-dataset, the demo questions);
                        --rag-url is its old spelling (deprecated, goes in the next release)
  --eval-dataset FILE   the questions, when no config gives them
  --eval-samples N      a seeded sample of N questions, for quick CI runs
  --eval-store DIR      where the run (and the baseline) live (default: the config's store)

The session-scoped `rag_eval` fixture runs the evaluation once, scores it, checks the config's
`thresholds` and (when `baseline` is set) significant regressions, and returns a GateOutcome.
A gate that could not check something fails too: a threshold metric with no value, a method the
baseline lacks, a metric compared on no question or on fewer than `min_paired` (config, default
0.9) of the questions with a value on either side (evalcore.outputs.gate).
Gate failures fail the whole session (non-zero exit) and are listed in the terminal summary;
`rag_eval.assert_ok()` also fails the calling test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # every pytest session of a user loads this plugin: it imports evalcore only when a gate runs
    from evalcore.outputs.gate import GateOutcome

_FAILURES = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalcore", "evalcore live RAG evaluation")
    group.addoption("--run-eval", action="store_true", default=False, help="Run live RAG evaluations.")
    group.addoption("--eval-config", default=None, help="Eval config file (YAML).")
    group.addoption("--eval-target", default=None, help="RAG server URL (evalcore run --target).")
    group.addoption("--rag-url", default=None, help="Old spelling of --eval-target (deprecated).")
    group.addoption("--eval-dataset", default=None, help="Question file.")
    group.addoption("--eval-samples", type=int, default=None, help="Sample N questions.")
    group.addoption("--eval-store", default=None, help="Run store folder.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rag_eval: a live RAG evaluation test; skipped without --run-eval")
    config.stash[_FAILURES] = []
    if config.getoption("--rag-url"):
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(
            "--rag-url is deprecated and goes in the next release; use --eval-target"), stacklevel=2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-eval"):
        return
    skip = pytest.mark.skip(reason="live RAG evaluation: pass --run-eval to run it")
    for item in items:
        if "rag_eval" in item.keywords or "rag_eval" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


# the eval config's fields the plugin's options set, for naming the option a value came from
_OPTION_OF = {"samples": "--eval-samples", "store": "--eval-store", "dataset": "--eval-dataset",
              "target": "--eval-target", "url": "--eval-target"}


def _build_config(pconfig: pytest.Config):
    """The eval config from the options; a value the config refuses is a usage error naming the
    option (the config file's own values are refused naming the file, by load_config)."""
    from pydantic import ValidationError

    try:
        return _config_from_options(pconfig)
    except ValidationError as exc:
        first = exc.errors()[0]
        option = next((_OPTION_OF[str(p)] for p in first.get("loc", ()) if str(p) in _OPTION_OF), "the eval config")
        raise pytest.UsageError(f"{option}: {first.get('input')!r}: {first.get('msg')}") from None


def _config_from_options(pconfig: pytest.Config):
    from evalcore.runner.config import EvalConfig, load_config

    overrides = {"samples": pconfig.getoption("--eval-samples"), "progress": False}
    if pconfig.getoption("--eval-store"):
        overrides["store"] = pconfig.getoption("--eval-store")
    if pconfig.getoption("--eval-dataset"):
        overrides["dataset"] = pconfig.getoption("--eval-dataset")
    url = pconfig.getoption("--eval-target") or pconfig.getoption("--rag-url")
    path = pconfig.getoption("--eval-config")
    if path:
        config = load_config(path, **overrides)
        if url:  # point every target of the config at this server
            config.targets = {k: spec.model_validate({**spec.model_dump(), "url": url})
                              for k, spec in config.targets.items()}
        return config
    if not url:
        raise pytest.UsageError("--run-eval needs --eval-config FILE or --eval-target URL")
    if "dataset" not in overrides:
        from evalcore.demo import questions_path

        overrides["dataset"] = str(questions_path())
    return EvalConfig.model_validate({"target": url, **{k: v for k, v in overrides.items() if v is not None}})


@pytest.fixture(scope="session")
def rag_eval(request: pytest.FixtureRequest) -> GateOutcome:
    """Run the configured evaluation once per session and check its quality gate."""
    pconfig = request.config
    if not pconfig.getoption("--run-eval"):
        pytest.skip("live RAG evaluation: pass --run-eval to run it")
    from evalcore.pipeline import run_evaluation
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    config = _build_config(pconfig)
    store = RunStore(config.store)
    result = run_evaluation(config, store)
    outcome = check_gate(store, result.run_id, config.thresholds, config.baseline, config.regression_alpha,
                         config.min_paired)
    if result.status != "complete":
        outcome.failures.append(f"run {result.run_id} ended {result.status}")
    if (config.thresholds or config.baseline) and not result.scored:
        outcome.failures.append(f"run {result.run_id} was not scored: {result.score_message}")
    pconfig.stash[_FAILURES].extend(outcome.failures)
    return outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.stash.get(_FAILURES, []) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    failures = config.stash.get(_FAILURES, [])
    if failures:
        terminalreporter.section("evalcore quality gate FAILED", red=True)
        from evalcore.common.inert_text import visible

        for line in failures:  # they quote method names and errors: control characters shown, not sent
            terminalreporter.line(visible(line))
