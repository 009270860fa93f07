"""Explicit registry of question formats: name -> (loader, sniffer, description).

`load_questions(path, fmt=None)` picks the format by name or by sniffing the file, so
`--dataset FILE` works for any supported file without the user naming its format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evalcore.datasets.native import load_native
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion


@dataclass(frozen=True)
class DatasetFormat:
    name: str
    load: Callable[[Path], list[EvalQuestion]]
    sniff: Callable[[Path], bool]
    description: str


def _always(_: Path) -> bool:
    return True


FORMATS: dict[str, DatasetFormat] = {}


def register(fmt: DatasetFormat) -> None:
    FORMATS[fmt.name] = fmt


def load_questions(path: str | Path, fmt: str | None = None) -> list[EvalQuestion]:
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "no such file")
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(str(path), f"unknown dataset format {fmt!r}; known: {', '.join(FORMATS)}")
        return FORMATS[fmt].load(path)
    for candidate in FORMATS.values():
        if candidate.name != "native" and candidate.sniff(path):
            return candidate.load(path)
    return FORMATS["native"].load(path)


register(DatasetFormat("native", load_native, _always,
                       "evalcore questions: JSONL / JSON / YAML / CSV / Parquet (see docs/data-formats.md)"))


@dataclass(frozen=True)
class PublicSet:
    """A public dataset fetched by name through the `datasets` library (optional, online)."""

    name: str
    load: Callable[..., list[EvalQuestion]]
    description: str


PUBLIC_SETS: dict[str, PublicSet] = {}


def register_public(item: PublicSet) -> None:
    PUBLIC_SETS[item.name] = item
