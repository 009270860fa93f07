"""EvalConfig: everything a live run needs, from YAML (`evalcore run --config`), CLI flags or Python.

One config = one dataset (or several public sets) x one or more methods. A method is a
target plus its settings (the `method` value sent to the server, top_k, extra template
params), so the same server asked with `local_search` and `basic_search` is two methods,
and two different servers are two methods too; all are asked in the same pass.

The snapshot stored in a run manifest (`snapshot()`) holds header *templates* such as
`Bearer ${MY_TOKEN}`, never resolved values, so a run can be resumed from its own manifest
with the environment supplying the secret again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalcore.errors import EvalcoreError, InputError, from_validation
from evalcore.schemas.ids import Id
from evalcore.schemas.trials import TrialCount
from evalcore.targets.spec import TargetSpec


def _plain_number(value: Any) -> Any:
    """Text is a number only in plain decimal notation (evalcore.schemas.numbers): pydantic's
    own parsing reads "1_0" as 10, which as a gate bound switched the gate off."""
    from evalcore.schemas.numbers import plain_decimal

    if isinstance(value, bool):
        raise ValueError("a bound must be a number, not true/false")
    return plain_decimal(value) if isinstance(value, str) else value


FiniteNumber = Annotated[float, BeforeValidator(_plain_number), Field(allow_inf_nan=False, strict=False)]


class MethodConfig(BaseModel):
    """One method: `name` is how results are labelled; `method` is what the server receives."""

    model_config = ConfigDict(extra="forbid")

    name: Id  # how answers are stored: the id rule (evalcore.schemas.ids)
    target: str = "default"
    method: str | None = None
    top_k: int | None = Field(default=None, ge=1, le=1000)
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def send_as(self) -> str:
        return self.method or self.name


class EvalConfig(BaseModel):
    """A live evaluation. `target` may be a URL string (evalcore's default contract)."""

    # no float setting may be inf or nan (a timeout that never fires, a backoff that never ends)
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    name: str | None = None
    target: TargetSpec | str | None = Field(default=None, validation_alias=AliasChoices("target", "rag_server_url", "url"))
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    methods: list[MethodConfig] = Field(default_factory=list)
    dataset: str | None = None
    datasets: list[str] = Field(default_factory=list)
    # What a repeated question id in a dataset file does: stop (error) or keep the first copy
    # and record the dropped ones in the manifest (keep_first). Stored in the snapshot, so a
    # resumed run re-reads the file the same way.
    on_duplicate: Literal["error", "keep_first"] = "error"
    samples: int | None = Field(default=None, ge=1, validation_alias=AliasChoices("samples", "samples_per_dataset"))
    # how many times every question is asked per method (`--trials T`, evalcore/schemas/trials.py):
    # each answer is stored and scored as its own trial. Left out of the snapshot at 1, so a run
    # without trials records the config it always did.
    trials: TrialCount = Field(default=1, exclude_if=lambda count: count == 1)
    seed: int = 0
    top_k: int = Field(default=10, ge=1, le=1000)
    concurrency: int = Field(default=8, ge=1, le=512)
    # time and size settings are finite and bounded: `--timeout inf` would wait forever
    timeout: float = Field(default=60.0, gt=0, le=86_400)
    retries: int = Field(default=3, ge=0, le=20)
    backoff: float = Field(default=0.5, ge=0, le=3_600)
    batch_size: int = Field(default=16, ge=1, le=10_000)
    flush_seconds: float = Field(default=2.0, gt=0, le=3_600)
    # What a target may make the runner do (evalcore/targets/fetch.py): follow a redirect to
    # another origin (never with the configured headers), and send a body of what size.
    follow_redirects: bool = False
    max_response_mb: float = Field(default=32.0, gt=0, le=4096)
    score: bool = True
    judge: str | None = None
    no_judge: bool = False
    metrics: list[str] | None = None
    groups: list[str] | None = None
    store: str | None = None
    # Options for scoring (evalcore.metrics.options): phrase lists, negative rules, snippet rule,
    # composite weights and budgets... Checked when the config is read, stored in the snapshot.
    score_options: dict[str, Any] = Field(default_factory=dict)
    # METRIC: minimum, or METRIC: {min: x, max: y}; finite numbers only (a NaN bound compares
    # false with everything and would switch the check off)
    thresholds: dict[str, FiniteNumber | dict[Literal["min", "max"], FiniteNumber]] = Field(default_factory=dict)
    baseline: str | None = None
    regression_alpha: FiniteNumber = Field(default=0.05, gt=0, lt=1)
    # with a baseline: the share of the questions with a value on either side that must have one on
    # both, or the gate fails as "compared too little" (evalcore.analysis.comparison.regression_gate)
    min_paired: FiniteNumber = Field(default=0.9, gt=0, le=1)
    progress: bool = True

    @field_validator("methods", mode="before")
    @classmethod
    def _method_names(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("datasets", mode="before")
    @classmethod
    def _dataset_names(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("on_duplicate", mode="before")
    @classmethod
    def _on_duplicate_spelling(cls, value: Any) -> Any:
        """Accept the CLI's spelling (`keep-first`) in a config file too."""
        return value.replace("-", "_") if isinstance(value, str) else value

    @field_validator("metrics", "groups", mode="before")
    @classmethod
    def _metric_names(cls, value: Any) -> Any:
        """`a,b` (a CLI flag) or a YAML list; an empty choice means "the defaults" (None)."""
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        if isinstance(value, list):
            value = [v.strip() if isinstance(v, str) else v for v in value]
            value = [v for v in value if v != ""]
            return list(dict.fromkeys(value)) or None
        return value

    @field_validator("thresholds", mode="before")
    @classmethod
    def _threshold_values(cls, value: Any) -> Any:
        """A bound is a number: true/false and an empty {} would gate on nothing. Each is then
        checked by the gate's own rule (metrics/gate_bounds.threshold_bounds: plain decimal,
        finite, inside the metric's range), so a config is refused when it is read, not when
        the gate runs after a whole evaluation."""
        if isinstance(value, dict) and value:
            for metric, spec in value.items():
                bounds = spec.values() if isinstance(spec, dict) else [spec]
                if isinstance(spec, dict) and not spec:
                    raise ValueError(f"threshold {metric!r}: give a minimum, or {{min: X}} and/or {{max: Y}}")
                if any(isinstance(b, bool) for b in bounds):
                    raise ValueError(f"threshold {metric!r}: a bound must be a number, not true/false")
            from evalcore.metrics.gate_bounds import threshold_bounds  # the registry: only with thresholds

            for metric, spec in value.items():
                try:
                    threshold_bounds(str(metric), spec)
                except EvalcoreError as exc:
                    raise ValueError(str(exc)) from None
        return value

    @field_validator("score_options")
    @classmethod
    def _known_score_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Unknown or malformed options fail here, before any question is asked. `judge` and
        `progress` have fields of their own, so they are refused here (one place each)."""
        from evalcore.metrics.options import check_options

        for own in ("judge", "progress"):
            if own in value:
                raise ValueError(f"set {own!r} as the config field `{own}`, not in score_options")
        try:
            return check_options(value, "score_options")
        except EvalcoreError as exc:
            raise ValueError(str(exc)) from exc

    @model_validator(mode="after")
    def _targets_and_methods(self) -> "EvalConfig":
        if isinstance(self.target, str):
            self.target = TargetSpec(url=self.target)
        if self.target is not None:
            if "default" in self.targets and self.targets["default"] != self.target:
                raise ValueError("give the default target either as `target` or as targets.default, not both")
            self.targets = {"default": self.target.model_copy(update={"name": "default"}), **self.targets}
            self.target = None
        for key, spec in list(self.targets.items()):
            if spec.name != key:
                self.targets[key] = spec.model_copy(update={"name": key})
        if not self.targets:
            raise ValueError("no target: give `target` (a URL or a target config) or `targets`")
        if not self.methods:
            self.methods = [MethodConfig(name="default" if len(self.targets) == 1 else key, target=key)
                            for key in self.targets]
        names = [m.name for m in self.methods]
        if len(set(names)) != len(names):
            raise ValueError(f"method names must be unique, got {names}")
        for m in self.methods:
            if m.target not in self.targets:
                raise ValueError(f"method {m.name!r} uses unknown target {m.target!r}; "
                                 f"known: {', '.join(self.targets)}")
        if not self.dataset and not self.datasets:
            raise ValueError("no questions: give `dataset` (a file) or `datasets` (names or files)")
        return self

    @property
    def judge_option(self) -> str | None:
        return None if self.no_judge else self.judge

    def check_metric_choice(self) -> None:
        """Fail before any question is asked when the chosen metrics or groups cannot be scored.

        Why here and not only in scoring: score_run checks the same names, but only after
        every answer has been collected, which on a large run wastes the whole collection.
        The registry is imported lazily (it loads every metric module).
        """
        if not self.score or not (self.metrics or self.groups):
            return
        from evalcore.metrics.registry import METRICS, groups

        unknown = [m for m in self.metrics or [] if m not in METRICS]
        if unknown:
            raise EvalcoreError(f"unknown metric(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(METRICS))}")
        known_groups = groups()
        bad = [g for g in self.groups or [] if g not in known_groups]
        if bad:
            raise EvalcoreError(f"unknown group(s) {', '.join(bad)}; known: {', '.join(sorted(known_groups))}")
        needs_judge = [m for m in self.metrics or [] if "judge" in METRICS[m].needs]
        if needs_judge and not self.judge_option:
            raise EvalcoreError(f"metric(s) {', '.join(needs_judge)} need a judge: pass --judge "
                             "(e.g. --judge heuristic)")

    def snapshot(self) -> dict[str, Any]:
        """The config as stored in run.json: header templates only, no resolved secrets."""
        data = self.model_dump(mode="json", exclude={"target", "targets", "progress"})
        data["targets"] = {k: t.public_dict() for k, t in self.targets.items()}
        return data

    def with_settings(self, **updates: Any) -> "EvalConfig":
        """A copy with `updates` applied, each validated by its field's own rules. Why not
        model_copy(update=...): it validates nothing, so `run --resume RUN --concurrency 0`
        went on with no worker at all, and --timeout nan with a timeout that never fires."""
        out = self.model_copy(deep=True)  # the model's checks may rewrite nested parts in place
        for name, value in updates.items():
            self.__pydantic_validator__.validate_assignment(out, name, value)
        return out

    @classmethod
    def from_snapshot(cls, data: dict[str, Any]) -> "EvalConfig":
        """Rebuild from a manifest's `config`. Other parts of evalcore add their own keys there
        (scoring records its history under `scoring`), so only this class's fields are read."""
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})


def load_config(path: str | Path, **overrides: Any) -> EvalConfig:
    """Read an EvalConfig from YAML/JSON; `overrides` (CLI flags that were given) win.

    Relative dataset paths are resolved against the config file's folder.
    """
    from evalcore.common.safe_yaml import read_settings

    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file")
    data = read_settings(path)  # small bounds: a config is small by nature (evalcore/common/safe_yaml.py)
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping of settings")
    data = {**data, **{k: v for k, v in overrides.items() if v is not None}}
    for key in ("dataset",):
        if isinstance(data.get(key), str) and not Path(data[key]).is_absolute():
            candidate = path.parent / data[key]
            if candidate.exists():
                data[key] = str(candidate)
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        given = {k for k, v in overrides.items() if v is not None}
        if given and all(e.get("loc") and e["loc"][0] in given for e in exc.errors()):
            raise  # the caller's values (CLI flags) were refused, not the file's: the CLI names the flag
        raise from_validation(str(path), None, exc) from exc
