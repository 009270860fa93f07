"""Damage inside one run: finding it, keeping it inside its run, and repairing the pointer.

Why this module: a run is a pointer (tables.json) and the files it names. Either can be lost
or damaged by things evalcore does not control (a disk, a sync tool, a person with `rm`), and
one bad file must cost one run, never the store, and never more data. So:

* a file that cannot be read is found by its footer, and an unreadable part file is set aside
  in `<run>/quarantine/` (store/quarantine.py: compaction needs those two alone);
* `check_run` opens every file the pointer names and lists what no pointer accounts for;
* `repair_run` rebuilds a lost or unreadable pointer from the newest readable generation of
  each table in data/ (file names carry the generation), and says what it chose and skipped.
  It deletes nothing: files it cannot use stay where they are, and only files superseded by
  the generation it chose are retired (removed by a later compaction, after the grace time).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow.parquet as pq

from evalcore.errors import StoreError
from evalcore.store import fs as _fs
from evalcore.store.fs import Location
from evalcore.store.layout import (
    DATA_DIR,
    FORMAT_VERSION,
    PARTS_DIR,
    POINTER,
    RUN_TABLES,
    RunDamaged,
    data_generation,
    is_legacy,
    is_part_name,
    pending_parts,
    QUARANTINE_DIR,
    read_pointer_versioned,
    write_pointer,
)
from evalcore.store.pointer_rules import KNOWN_TABLES, MAX_GENERATION
from evalcore.store.quarantine import part_problem, quarantined_files
from evalcore.store.run_damage import (
    NOT_REPAIRABLE,
    PERSON,
    REBUILD,
    REMOVE,
    SET_ASIDE,
    Damage,
    behind,
    file_findings,
    findings,
)
from evalcore.store.run_links import remove_links

log = logging.getLogger(__name__)

# ---- store check -----------------------------------------------------------------------------
@dataclass
class RunCheck:
    """What `store check` found in one run: damage (the run cannot be read whole) and files
    nothing accounts for (strays: not damage, but worth a look)."""

    run_id: str
    files_checked: int = 0
    damage: list[str] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        return bool(self.damage)


def check_run(run_dir: Location, deep: bool = True) -> RunCheck:
    """Every finding of store/run_damage.py (the reasons writers refuse a run among them), then
    the files in data/, parts/ and quarantine/ that no pointer accounts for or that the next
    write sets aside (strays)."""
    result = RunCheck(run_dir.name)
    found = findings(run_dir, deep=deep)
    result.damage.extend(d.line() for d in found)
    odd = {d.link.rel for d in found if d.link is not None}
    legacy = is_legacy(run_dir)
    try:
        pointer = {} if legacy else read_pointer_versioned(run_dir)[0]
    except RunDamaged:
        pointer = None
    result.files_checked = len((pointer or {}).get("files", {}))
    for table in RUN_TABLES:
        for part in pending_parts(run_dir, table):
            rel = part.relative_to(run_dir).as_posix()
            result.files_checked += legacy
            if legacy or behind(rel, odd):
                continue  # a format-1 run's parts are its rows (findings); a link is named above
            why = part_problem(part, table, run_dir.name, deep=False)
            if why:
                result.strays.append(f"{rel}: {why}; the next write to the run sets it aside in {QUARANTINE_DIR}/")
    if pointer is not None and not legacy:
        result.strays.extend(_data_strays(run_dir, pointer, odd))
    result.strays.extend(_misnamed_parts(run_dir, legacy, odd))
    for path, size in quarantined_files(run_dir):
        if behind(path.relative_to(run_dir).as_posix(), odd):
            continue
        result.strays.append(f"{path.relative_to(run_dir).as_posix()}: set aside by a write, a part file the run "
                             f"could not absorb ({size} bytes); kept for you to inspect or delete")
    return result


def _data_strays(run_dir: Location, pointer: dict, odd: set[str]) -> list[str]:
    named = set(pointer["files"].values()) | set(pointer.get("retired") or {})
    generation = int(pointer.get("generation", 0))
    out = []
    for f in _listing(run_dir / DATA_DIR):
        rel = f"{DATA_DIR}/{f.name}"
        if rel in named or rel in odd:  # a link (or a FIFO...) is damage, named as such
            continue
        parsed = data_generation(f.name)
        if parsed and parsed[1] == generation + 1:
            why = "written by a compaction that has not published (running, or killed); the next one removes it"
        elif parsed and parsed[1] > generation + 1:
            why = f"newer than the pointer's generation {generation}; kept (was the pointer restored from a copy?)"
        else:
            why = "named by no pointer; kept"
        out.append(f"{rel}: {why}")
    return out


def _misnamed_parts(run_dir: Location, legacy: bool, odd: set[str]) -> list[str]:
    """Files in a parts folder named unlike a part file (layout.pending_parts): never absorbed."""
    out = []
    for table in RUN_TABLES:
        for folder in (run_dir / PARTS_DIR / table, *([run_dir / table] if legacy else [])):
            for f in _listing(folder):
                if not is_part_name(f.name) and not f.name.startswith(".") \
                        and f.relative_to(run_dir).as_posix() not in odd:
                    out.append(f"{f.relative_to(run_dir).as_posix()}: not named like a part file "
                               "(letters, digits, '.', '_', '-', ending .parquet); never absorbed, kept")
    return out


def _listing(folder: Location) -> list[Location]:
    try:
        return sorted(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


# ---- store repair ----------------------------------------------------------------------------
@dataclass
class Repair:
    """What `store repair` did: the links removed, the file chosen per table, the files
    skipped (left in place) and why, the files retired as superseded, and the generation the
    new pointer carries."""

    run_id: str
    needed: bool = True
    generation: int = 0
    chosen: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # tables with files, none of them readable
    unlinked: list[str] = field(default_factory=list)  # the links (FIFOs...) removed, one line each
    set_aside: list[str] = field(default_factory=list)  # a format-1 run's parts set aside by its upgrade

    def lines(self) -> list[str]:
        removed = [f"run {self.run_id}: {line}" for line in self.unlinked]
        if self.set_aside:
            removed.append(f"run {self.run_id}: upgraded to format {FORMAT_VERSION}, setting aside in "
                           f"{QUARANTINE_DIR}/ {len(self.set_aside)} part file(s) it cannot absorb: "
                           + ", ".join(self.set_aside[:3]))
        if not self.needed:
            rest = "nothing else to repair" if removed else "nothing to repair"
            return removed + [f"run {self.run_id}: its pointer and every file it names read; {rest}"]
        out = removed + [f"run {self.run_id}: rebuilt {POINTER} from {DATA_DIR}/ (generation {self.generation})"]
        out += [f"  {t}: {rel} ({self.rows.get(t, 0)} rows)" for t, rel in sorted(self.chosen.items())]
        missing = [t for t in RUN_TABLES if t not in self.chosen and t not in self.lost]
        if missing:
            out.append(f"  no file in {DATA_DIR}/ (empty): {', '.join(missing)}")
        out += [f"  skipped {s}" for s in self.skipped]
        out += [f"  LOST {t}: no readable generation is left; restore a copy of its file to get its rows back"
                for t in self.lost]
        if self.retired:
            out.append(f"  retired {len(self.retired)} superseded file(s) (removed by a later compaction)")
        out.append("  summaries recomputed; rows written since the last compaction (parts/) absorbed")
        return out


def repair_run(run_dir: Location) -> Repair:
    """Act on the run's findings (store/run_damage.py, the list `store check` prints): refuse in
    one line, changing nothing, if one needs a person; remove the links (and FIFOs...) in the
    run; if its pointer is lost or names a file with a finding, rebuild the pointer from data/
    (the module docstring) and compact the run so its summaries are computed again from the
    files chosen; compact a format-1 run whose parts cannot all be absorbed. A run without
    findings is left alone."""
    from evalcore.store.compaction import compact, compaction_lock

    report = Repair(run_dir.name)
    if not _has_run_json(run_dir):
        raise StoreError(f"no run {run_dir.name!r} in store {run_dir.parent}")
    # a copy of another run (or a link) is not repaired into a run of its own: that would
    # count the other run's rows twice (store/layout.run_identity_problem)
    found = _refuse_person(run_dir, findings(run_dir, deep=True))
    report.unlinked = remove_links(run_dir, [d.link for d in found if d.repair == REMOVE and d.link is not None])
    found = _refuse_person(run_dir, findings(run_dir, deep=True))  # what removing them showed (a lost pointer)
    problem = _pointer_elsewhere(run_dir)
    if problem:
        raise RunDamaged(run_dir, problem, hint=NOT_REPAIRABLE)
    if not any(d.repair == REBUILD for d in found):
        report.set_aside = [d.rel or d.problem for d in found if d.repair == SET_ASIDE]
        report.needed = False
        if report.set_aside:
            compact(run_dir, force_summary=True)
        return report
    with compaction_lock(run_dir):
        retired = _choose(run_dir, report)
        pointer: dict[str, Any] = {
            "format_version": FORMAT_VERSION, "generation": report.generation, "files": dict(report.chosen),
            "previous": [], "rows": dict(report.rows), "replaced": {}, "absorbed": [], "retired": retired,
            "repaired_at": datetime.now(timezone.utc).isoformat(),
            "repair": {"skipped": report.skipped, "lost": report.lost}}
        try:
            token = _fs.read_versioned(run_dir / POINTER)[1]
        except OSError:  # missing, or (removed meanwhile) no regular file: written anew
            token = None
        write_pointer(run_dir, pointer, token)
    compact(run_dir, force_summary=True)
    return report


def _has_run_json(run_dir: Location) -> bool:
    """A run.json of any kind: a FIFO in its place is a finding that says what to do."""
    path = run_dir / "run.json"
    return path.is_file() or (not _fs.is_remote(path) and os.path.lexists(path))


def _refuse_person(run_dir: Location, found: list[Damage]) -> list[Damage]:
    """`found`, unless one needs a person: then RunDamaged (one line, what to do), before
    anything is changed."""
    for damage in found:
        if damage.repair == PERSON:
            hint = damage.way_out if damage.way_out == NOT_REPAIRABLE else f"{damage.way_out}; nothing was changed"
            raise RunDamaged(run_dir, damage.problem, file=damage.rel, hint=hint)
    return found


def _choose(run_dir: Location, report: Repair) -> dict[str, float]:
    """Fill `report` with the newest readable file of each run table in data/ (and the
    generation the pointer carries); return the files to retire (older ones, old summaries)."""
    candidates: dict[str, list[tuple[int, float, Location]]] = {}
    for f in _listing(run_dir / DATA_DIR):
        parsed = data_generation(f.name)
        if parsed is None or f.name.startswith(".") or f.name.endswith(".tmp") or parsed[0] not in KNOWN_TABLES \
                or parsed[1] >= MAX_GENERATION:
            report.skipped.append(f"{DATA_DIR}/{f.name}: not a published data file; left in place")
            continue
        report.generation = max(report.generation, parsed[1])  # the next compaction writes it + 1: a new name
        candidates.setdefault(parsed[0], []).append((parsed[1], _mtime(f), f))
    now = time.time()
    retired: dict[str, float] = {}
    for table, found in sorted(candidates.items()):
        found.sort(key=lambda c: (c[0], c[1]), reverse=True)
        rels = [f"{DATA_DIR}/{c[2].name}" for c in found]
        if table not in RUN_TABLES:  # summaries: derived, recomputed below
            retired.update({rel: now for rel in rels})
            continue
        for rel in rels:
            if table in report.chosen:
                retired[rel] = now  # an older generation: the chosen one merged it
                continue
            wrong = next(file_findings(run_dir, table, rel, deep=True), None)  # what check says of it
            if wrong:
                report.skipped.append(f"{wrong.problem}; left in place")
                continue
            where, filesystem = _fs.arrow(run_dir / rel)
            report.chosen[table] = rel
            report.rows[table] = pq.read_metadata(where, filesystem=filesystem).num_rows
        if table not in report.chosen:
            report.lost.append(table)
    report.retired = sorted(retired)
    return retired


def _pointer_elsewhere(run_dir: Location) -> str | None:
    """Why the pointer says the folder is another run's (None if it does not say so)."""
    try:
        claimed = json.loads(_fs.read_small(run_dir / POINTER).decode("utf-8")).get("run_id", run_dir.name)
    except (OSError, ValueError, AttributeError):
        return None  # missing or unreadable: what repair is for
    if claimed != run_dir.name:
        return f"its {POINTER} was written for run {claimed!r}: a copied or renamed run folder"
    return None


def _mtime(path: Location) -> float:
    try:
        st = path.stat()
    except FileNotFoundError:
        return 0.0
    return float(st.st_mtime)
