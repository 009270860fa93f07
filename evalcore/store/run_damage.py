"""What makes a run damaged: one list, read by writers, `store check` and `store repair` alike.

Why one list: a writer that refuses a run for a reason `store check` does not know sends the
user in a circle. A symbolic link in `parts/` (F9), then a part file copied from another run
(round 3, R3-4), each made `score` refuse the run and point to `store check`, which said
"0 damaged", while `store repair` said "nothing to repair": the run could never be written
again. So the reasons live here and nowhere else. Each finding (`Damage`) says what is wrong,
what to do about it, what `store repair` does about it, and whether writers refuse the run for
it:

* writers (the compaction behind every write) call `refuse()`, which raises the first finding
  they refuse, before touching anything;
* `store check` lists every finding (`findings(deep=True)`), so a run a writer refuses is never
  one it calls healthy;
* `store repair` works off the same findings: it removes what is `REMOVE`, rebuilds the pointer
  for what is `REBUILD` (choosing only data files this list accepts: `file_findings`), compacts
  for what is `SET_ASIDE`, and for what is `PERSON` refuses in one line saying what to do.

What is found, in order (each finding also names its file):
 1. the folder is not the run it names (a copy, a renamed folder, an edited run.json), or lies
    under a link (PERSON);
 2. a symbolic link, FIFO, socket or device node anywhere in the run (store/run_links.py:
    REMOVE, or PERSON for a link the rows are read through and for run.json); a folder where
    the layout has a file (the pointer, a lock file) or a file where it has a folder (data/,
    parts/<table>/...): PERSON, moved out of the run;
 3. run.json that is no JSON object (PERSON: no tool can rebuild a manifest);
 4. a pointer that is missing, unreadable, too large or names what evalcore never writes
    (store/pointer_rules.py: REBUILD; PERSON when it was written for another folder);
 5. a file the pointer names that is unreadable, of another table, or holds another run's rows;
    a row count that differs from the pointer's (REBUILD; writers refuse the first three for
    the run tables they merge, `deep` or not: footers, and the run_id column where a footer
    cannot answer);
 6. a format-1 run's part file (its rows) that cannot be absorbed (SET_ASIDE: a compaction
    upgrades the run and sets it aside).
A format-2 run's pending part file that cannot be absorbed (not Parquet, another table's
columns, another run's rows: quarantine.part_problem) is no damage: the next write sets it
aside in quarantine/, and `store check` lists it as a stray saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import (
    COMPACT_LOCK,
    COPY_HINT,
    DATA_DIR,
    LOCK_NAME,
    PARTS_DIR,
    POINTER,
    QUARANTINE_DIR,
    RUN_TABLES,
    RunDamaged,
    is_legacy,
    pending_parts,
    read_pointer_versioned,
    repair_hint,
    run_identity_problem,
    run_root,
)
from evalcore.store.quarantine import foreign_problem, foreign_run, footer, misfiled, part_problem, unreadable
from evalcore.store.run_links import Link, links_in

REMOVE, REBUILD, SET_ASIDE, PERSON = "remove", "rebuild", "set aside", "person"
NOT_REPAIRABLE = "repair cannot fix this; rename the folder back or delete it"


@dataclass(frozen=True)
class Damage:
    """One reason a run cannot be read whole or written: what (`problem`, naming the file), what
    to do (`way_out`), what `store repair` does (`repair`), whether writers refuse the run for
    it (`refused`), and the file (`rel`, relative to the run folder) when one file is the problem."""

    problem: str
    way_out: str
    repair: str
    refused: bool = True
    rel: str | None = None
    link: Link | None = None  # the link (or FIFO...) when that is the finding

    def line(self) -> str:
        return f"{self.problem} ({self.way_out})"

    def error(self, run_dir: Location) -> RunDamaged:
        return RunDamaged(run_dir, self.problem, file=self.rel, hint=self.way_out)


def findings(run_dir: Location, deep: bool = True) -> list[Damage]:
    """Every finding in the run (module docstring), for `store check` and `store repair`;
    `deep`: every row of every file is decoded, not only the footers."""
    return list(_findings(run_dir, deep=deep, writer=False))


def refuse(run_dir: Location, files: bool = True) -> None:
    """RunDamaged for the first finding writers refuse; nothing if there is none. `files=False`:
    findings 1-2 only (before a writer even opens the run's lock file)."""
    for damage in _findings(run_dir, deep=False, writer=True, files=files):
        if damage.refused:
            raise damage.error(run_dir)


def _findings(run_dir: Location, deep: bool, writer: bool, files: bool = True) -> Iterator[Damage]:
    identity = run_identity_problem(run_dir)
    if identity:
        yield Damage(identity, NOT_REPAIRABLE, PERSON)
    try:
        _safe.inside(run_root(run_dir), run_dir)
    except _safe.OutsideStore as exc:
        yield Damage(exc.why, "the store never writes there: replace it by a real folder", PERSON)
        return
    links = links_in(run_dir)
    for link in links:
        yield Damage(link.problem(), link.way_out(run_dir.name), PERSON if link.holds_rows else REMOVE,
                     rel=link.rel, link=link)
    odd = {link.rel for link in links}
    misplaced = list(_layout_findings(run_dir, odd))
    yield from misplaced
    if not files:
        return
    odd |= {d.rel for d in misplaced if d.rel}
    if "run.json" not in odd:
        yield from _manifest_findings(run_dir)
    legacy = is_legacy(run_dir)
    pointer: dict[str, Any] | None = {}
    if not legacy:
        try:
            pointer = read_pointer_versioned(run_dir)[0]
        except RunDamaged as exc:
            pointer = None
            if POINTER not in odd:  # else named above
                yield Damage(exc.problem, exc.hint, PERSON if exc.hint == COPY_HINT else REBUILD, rel=POINTER)
    for name, rel in sorted((pointer or {}).get("files", {}).items()):
        if writer and name not in RUN_TABLES:
            continue  # derived tables are recomputed by a write, never read by it
        if not behind(rel, odd):  # a link is named above, and never opened (it may lead to a pipe)
            yield from file_findings(run_dir, name, rel, deep=deep, rows=None if writer else pointer.get("rows"))
    if legacy and not writer:
        yield from _legacy_part_findings(run_dir, odd, deep)


def file_findings(run_dir: Location, table: str, rel: str, deep: bool = True,
                  rows: dict[str, Any] | None = None) -> Iterator[Damage]:
    """What is wrong with a data file of `table` (finding 5): unreadable (its footer; with
    `deep`, every row), another table's columns, another run's rows, and (given the pointer's
    `rows`) a row count other than the pointer's. `store repair` chooses only a file with none."""
    hint = repair_hint(run_dir.name)
    meta, why = footer(run_dir / rel)
    why = why or (unreadable(run_dir / rel, deep=True) if deep else None)
    if why:
        yield Damage(f"{rel} is unreadable ({why})", hint, REBUILD, refused=table in RUN_TABLES, rel=rel)
        return
    wrong_table = misfiled(run_dir / rel, table, meta)
    if wrong_table:
        yield Damage(f"{rel}: {wrong_table}", hint, REBUILD, rel=rel)
        return
    foreign = foreign_problem(foreign_run(run_dir / rel, run_dir.name, meta))
    if foreign:
        yield Damage(f"{rel} {foreign} (a copied run folder, or a file put there by hand)",
                     f"{hint}, leaving that file out; if every file of the run is another run's, delete this copy",
                     REBUILD, rel=rel)
        return
    expected = (rows or {}).get(table)
    if isinstance(expected, int) and table in RUN_TABLES and meta.num_rows != expected:
        yield Damage(f"{rel} holds {meta.num_rows} rows, the pointer says {expected}", hint, REBUILD,
                     refused=False, rel=rel)


def _layout_findings(run_dir: Location, odd: set[str]) -> Iterator[Damage]:
    """A folder where the layout has a file (run.json, the pointer, a lock file), or a file
    where it has a folder (data/, parts/<table>/, quarantine/...): evalcore never makes either,
    and a writer would fail on it. Not evalcore's to remove (a folder may hold anything): a
    person moves it out of the run."""
    if _fs.is_remote(run_dir):
        return
    folders = [DATA_DIR, PARTS_DIR, QUARANTINE_DIR, f"{QUARANTINE_DIR}/{PARTS_DIR}",
               *(f"{PARTS_DIR}/{t}" for t in RUN_TABLES), *(f"{QUARANTINE_DIR}/{PARTS_DIR}/{t}" for t in RUN_TABLES)]
    for rel, want_folder in [*((f, False) for f in ("run.json", POINTER, LOCK_NAME, COMPACT_LOCK)),
                             *((f, True) for f in folders)]:
        if behind(rel, odd):
            continue  # a link (FIFO...), named as such
        path = run_dir / rel
        if (path.is_dir() if not want_folder else path.is_file()):
            found = "a folder, not a file" if not want_folder else "a file, not a folder"
            yield Damage(f"{rel} is {found}", "evalcore never makes it so, and a write to the run would fail on it: "
                         f"move it out of the run folder, then run `evalcore store repair {run_dir.name}`", PERSON,
                         rel=rel)


def _manifest_findings(run_dir: Location) -> Iterator[Damage]:
    """run.json that cannot be read as a JSON object (finding 3)."""
    path = run_dir / "run.json"
    try:
        data = json.loads(_fs.read_small(path).decode("utf-8"))
        problem = None if isinstance(data, dict) else "it is not a JSON object"
    except FileNotFoundError:
        return  # no run here (yet), or one being deleted
    except (OSError, ValueError) as exc:
        problem = f"it {exc.why}" if hasattr(exc, "why") else " ".join(str(exc).split())
    if problem:
        yield Damage(f"run.json is unreadable ({problem})",
                     "`evalcore store repair` cannot rebuild a manifest: put a copy of the run's run.json in its "
                     f"place (from a backup), or delete the run with `evalcore delete {run_dir.name}`",
                     PERSON, rel="run.json")


def _legacy_part_findings(run_dir: Location, odd: set[str], deep: bool) -> Iterator[Damage]:
    """A format-1 run's part files are its rows: one that cannot be absorbed is damage (6)."""
    for table in RUN_TABLES:
        for part in pending_parts(run_dir, table):
            rel = part.relative_to(run_dir).as_posix()
            why = None if behind(rel, odd) else part_problem(part, table, run_dir.name, deep=deep)
            if why:
                yield Damage(f"{rel}: {why}", f"`evalcore store repair {run_dir.name}` upgrades the run and sets "
                                              "the file aside in quarantine/", SET_ASIDE, refused=False, rel=rel)


def behind(rel: str, odd: set[str]) -> bool:
    """Whether `rel` is one of the links (or FIFOs...) found, or lies under one."""
    parts = rel.split("/")
    return any("/".join(parts[:i]) in odd for i in range(1, len(parts) + 1))
