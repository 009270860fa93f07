"""A flag value a settings model refuses becomes one `error:` line naming the flag (exit 2).

Why one mechanism: commands hand their flags to pydantic models (`run` builds an EvalConfig from
--timeout, --concurrency, --max-response-mb ...), and the models hold the limits. A value they
refused escaped as a ValidationError: "unexpected ValidationError", pydantic's multi-clause text
and a link, exit 1, for `run --max-response-mb 0`, while the same value in a config file was a
clean exit 2 naming the file. Checking each flag again in each command would copy every limit
and miss the next flag; instead every command's callback is wrapped once, when the CLI looks
the command up (cli/main.py), and a ValidationError raised while it runs is read back to the
flag that supplied the refused value:
  - a flag whose parameter name is a field on the error's path (`max_response_mb`), given a
    value (not its default), or else
  - the one given flag whose value is the refused input.
A ValidationError no flag explains is left alone (it is a bug, and stays "unexpected"): data
read from files is reported by its readers, naming the file, record and field.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable

from evalcore.errors import EvalcoreError

if TYPE_CHECKING:  # every command is guarded; most never load pydantic (`runs` over a saved listing)
    from pydantic import ValidationError

_GUARDED = "_evalcore_flag_errors"


def _same(given: Any, refused: Any) -> bool:
    """Whether the refused input is the flag's value (NaN is NaN; a comma list holds its items)."""
    if isinstance(given, float) and isinstance(refused, float) and math.isnan(given) and math.isnan(refused):
        return True
    if isinstance(given, str) and isinstance(refused, str) and refused and refused in given.split(","):
        return True
    try:
        return bool(given == refused)
    except Exception:  # noqa: BLE001 - an exotic input that cannot be compared is not this flag's
        return False


def _given(param: Any, values: dict[str, Any]) -> bool:
    value = values.get(param.name)
    if value is None or isinstance(value, bool):
        return False
    default = getattr(param, "default", None)
    return not _same(value, default) if default is not None else True


def _flag(param: Any) -> str:
    opts = list(getattr(param, "opts", []) or [])
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(param.name).upper()
    return next((o for o in opts if o.startswith("--")), opts[0])


def _flags_for(error: dict[str, Any], params: Iterable[Any], values: dict[str, Any]) -> list[Any]:
    """The given flags behind one problem: the one named on its path, else the one holding the
    refused value; for a rule over the whole model (an empty path: "method names must be
    unique", "give a dataset or datasets"), every given flag among the values it was handed."""
    given = [p for p in params if p.name and _given(p, values)]
    path = {str(part) for part in error.get("loc", ())}
    if not path and isinstance(error.get("input"), dict):
        return [p for p in given if p.name in error["input"]]
    by_name = [p for p in given if p.name in path]
    if by_name:
        return by_name[:1]
    by_value = [p for p in given if "input" in error and _same(values[p.name], error["input"])]
    return by_value if len(by_value) == 1 else []


def _words(message: str) -> str:
    """pydantic's sentence about its input, as a sentence about the flag's value."""
    for lead in ("Input should be", "Value error, "):
        if message.startswith(lead):
            return ("should be" + message[len(lead):]) if lead.startswith("Input") else message[len(lead):]
    return message


def flag_error(exc: ValidationError, params: Iterable[Any], values: dict[str, Any]) -> EvalcoreError | None:
    """The one-line error naming the flag behind `exc`'s first explained problem, or None."""
    params = list(params)
    problems = exc.errors()
    for error in problems:
        found = _flags_for(error, params, values)
        if not found:
            continue
        if len(found) == 1:
            value = values[found[0].name]
            shown = repr(value) if isinstance(value, str) else str(value)
            if isinstance(value, float) and math.isnan(value):
                shown += " (not a number)"
            where = f"{_flag(found[0])} {shown}"
        else:
            where = " / ".join(_flag(p) for p in found)
        more = len(problems) - 1
        extra = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
        return EvalcoreError(f"{where}: {_words(str(error.get('msg', '')))}{extra}")
    return None


def guard_flags(command: Any) -> Any:
    """Wrap `command`'s callback, and every subcommand's, once (see the module docstring)."""
    for sub in (getattr(command, "commands", None) or {}).values():
        guard_flags(sub)
    callback: Callable[..., Any] | None = getattr(command, "callback", None)
    if callback is None or getattr(callback, _GUARDED, False):
        return command

    @functools.wraps(callback)
    def guarded(*args: Any, **values: Any) -> Any:
        try:
            return callback(*args, **values)
        except Exception as exc:
            core = sys.modules.get("pydantic_core")  # a ValidationError exists only once pydantic is loaded
            if core is None or not isinstance(exc, core.ValidationError):
                raise
            mapped = flag_error(exc, command.params, values)
            if mapped is None:
                raise
            raise mapped from exc

    setattr(guarded, _GUARDED, True)
    command.callback = guarded
    return command
