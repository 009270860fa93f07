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
    read_pointer_versioned,
    repair_hint,
    run_identity_problem,
    write_pointer,
)
from evalcore.store.pointer_rules import KNOWN_TABLES, MAX_GENERATION, columns_problem
from evalcore.store.quarantine import misfiled, quarantined_files, unreadable
from evalcore.store.run_links import links_in, remove_links, run_folder_problem

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
    """Open every file the run's pointer names (every row with `deep`), compare row counts with
    the pointer's, and list files in data/, parts/ and quarantine/ that no pointer accounts for."""
    result = RunCheck(run_dir.name)
    identity = run_identity_problem(run_dir)
    if identity:
        result.damage.append(identity)
    links = links_in(run_dir)
    result.damage.extend(f"{link.problem()} ({link.way_out(run_dir.name)})" for link in links)
    linked = {link.rel for link in links}
    legacy = is_legacy(run_dir)
    try:
        pointer = {} if legacy else read_pointer_versioned(run_dir)[0]
    except RunDamaged as exc:
        if POINTER not in linked:  # else named above
            result.damage.append(f"{exc.problem} ({exc.hint})")
        pointer = None
    files = dict(pointer["files"]) if pointer else {}
    for name, rel in sorted(files.items()):
        result.files_checked += 1
        if _behind_link(rel, linked):
            continue  # named above; never opened through a link (it may lead anywhere, a pipe too)
        why = unreadable(run_dir / rel, deep=deep)
        if why:
            result.damage.append(f"{rel} is unreadable ({why})")
            continue
        where, filesystem = _fs.arrow(run_dir / rel)
        meta = pq.read_metadata(where, filesystem=filesystem)
        wrong_table = columns_problem(name, meta.schema.to_arrow_schema().names)
        if wrong_table:
            result.damage.append(f"{rel}: {wrong_table} ({repair_hint(run_dir.name)})")
            continue
        foreign = _foreign_run(run_dir / rel, run_dir.name, deep)
        if foreign is not None:
            result.damage.append(f"{rel} holds rows of run {foreign!r}, not of this one (a copied run folder?)")
        expected = (pointer.get("rows") or {}).get(name)
        if isinstance(expected, int) and name in RUN_TABLES:
            have = meta.num_rows
            if have != expected:
                result.damage.append(f"{rel} holds {have} rows, the pointer says {expected}")
    for table in RUN_TABLES:
        for part in pending_parts(run_dir, table):
            if _behind_link(part.relative_to(run_dir).as_posix(), linked):
                continue  # named above, as a link
            result.files_checked += legacy
            why = unreadable(part, deep=deep and legacy) or misfiled(part, table)
            if why and legacy:
                result.damage.append(f"{part.relative_to(run_dir).as_posix()} is unreadable ({why})")
            elif why:
                result.strays.append(f"{part.relative_to(run_dir).as_posix()}: unreadable part file ({why}); "
                                     "the next write to the run sets it aside")
    if pointer is not None and not legacy:
        result.strays.extend(_data_strays(run_dir, pointer))
    result.strays.extend(_misnamed_parts(run_dir, legacy))
    for path, size in quarantined_files(run_dir):
        if _behind_link(path.relative_to(run_dir).as_posix(), linked):
            continue
        result.strays.append(f"{path.relative_to(run_dir).as_posix()}: set aside as unreadable ({size} bytes)")
    return result


def _behind_link(rel: str, linked: set[str]) -> bool:
    """Whether `rel` is one of the links found, or lies under one."""
    parts = rel.split("/")
    return any("/".join(parts[:i]) in linked for i in range(1, len(parts) + 1))


def _foreign_run(path: Location, run_id: str, deep: bool) -> str | None:
    """Another run's id that rows of this file carry (None if every row is this run's): every
    row's with `deep`, else what the footer's statistics say (nothing when it has none)."""
    where, filesystem = _fs.arrow(path)
    meta = pq.read_metadata(where, filesystem=filesystem)
    if deep and "run_id" in meta.schema.names:
        column = pq.read_table(where, columns=["run_id"], filesystem=filesystem).column("run_id")
        found = [v for v in column.unique().to_pylist() if v != run_id]
        return str(found[0]) if found else None
    index = meta.schema.names.index("run_id") if "run_id" in meta.schema.names else None
    for g in range(meta.num_row_groups if index is not None else 0):
        stats = meta.row_group(g).column(index).statistics
        if stats is not None and stats.has_min_max:
            for value in (stats.min, stats.max):
                value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                if value != run_id:
                    return str(value)
    return None


def _data_strays(run_dir: Location, pointer: dict) -> list[str]:
    named = set(pointer["files"].values()) | set(pointer.get("retired") or {})
    generation = int(pointer.get("generation", 0))
    out = []
    for f in _listing(run_dir / DATA_DIR):
        rel = f"{DATA_DIR}/{f.name}"
        if rel in named or f.is_symlink():  # a link is damage, named as such
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


def _misnamed_parts(run_dir: Location, legacy: bool) -> list[str]:
    """Files in a parts folder named unlike a part file (layout.pending_parts): never absorbed."""
    out = []
    for table in RUN_TABLES:
        for folder in (run_dir / PARTS_DIR / table, *([run_dir / table] if legacy else [])):
            for f in _listing(folder):
                if not is_part_name(f.name) and not f.name.startswith(".") and not f.is_symlink():
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
    unlinked: list[str] = field(default_factory=list)  # the links removed, one line each

    def lines(self) -> list[str]:
        removed = [f"run {self.run_id}: {line}" for line in self.unlinked]
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


def _healthy(run_dir: Location) -> bool:
    try:
        pointer = read_pointer_versioned(run_dir)[0]
    except RunDamaged:
        return False
    return all(unreadable(run_dir / rel) is None and misfiled(run_dir / rel, name) is None
               for name, rel in pointer["files"].items())


def repair_run(run_dir: Location) -> Repair:
    """Remove the links in the run (store/run_links.py), then, if its pointer is lost or names
    a file that cannot be read, rebuild it from data/ (see the module docstring) and compact the
    run so its summaries are computed again from the files chosen. A run that reads whole is
    left alone."""
    from evalcore.store.compaction import compact, compaction_lock

    report = Repair(run_dir.name)
    if not (run_dir / "run.json").is_file():
        raise StoreError(f"no run {run_dir.name!r} in store {run_dir.parent}")
    # a copy of another run (or a link) is not repaired into a run of its own: that would
    # count the other run's rows twice (store/layout.run_identity_problem)
    problem = run_identity_problem(run_dir)
    if problem:
        raise RunDamaged(run_dir, problem, hint="repair cannot fix this; rename the folder back or delete it")
    report.unlinked = _remove_links(run_dir)
    linked = run_folder_problem(run_dir)  # what is left: a link created meanwhile
    if linked:
        raise RunDamaged(run_dir, linked[0], hint=linked[1])
    problem = _pointer_elsewhere(run_dir)
    if problem:
        raise RunDamaged(run_dir, problem, hint="repair cannot fix this; rename the folder back or delete it")
    if is_legacy(run_dir) or _healthy(run_dir):
        report.needed = False
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
        except FileNotFoundError:
            token = None
        write_pointer(run_dir, pointer, token)
    compact(run_dir, force_summary=True)
    return report


def _remove_links(run_dir: Location) -> list[str]:
    """Remove every link in the run, all or none: a link the run's rows are read through is
    refused (one line naming it) before anything is removed (store/run_links.py)."""
    links = links_in(run_dir)
    kept = [link for link in links if link.holds_rows]
    if kept:
        raise RunDamaged(run_dir, kept[0].problem(), hint=kept[0].way_out(run_dir.name) + "; nothing was changed")
    return remove_links(run_dir, links)


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
            why = unreadable(run_dir / rel, deep=True)
            why = f"unreadable ({why})" if why else misfiled(run_dir / rel, table)
            if why:
                report.skipped.append(f"{rel}: {why}; left in place")
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
        claimed = json.loads((run_dir / POINTER).read_bytes().decode("utf-8")).get("run_id", run_dir.name)
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
