"""Which run a reference typed by a person means: `RunStore.resolve`.

Why a module of its own: the order of the rules decides what "base" means, and a prefix rule
taken first made it "ambiguous" with runs named `base` and `base2` (both ids start with
"base"), although one run is named exactly that. The rules, first match wins:
  1. `latest`: the newest run;
  2. an exact run id;
  3. an exact run name, read under the id rule (evalcore.schemas.ids: NFC, no outer spaces);
     two runs of that name are ambiguous (give an id). A name is matched as the text it is: it
     may hold spaces or accents an id cannot;
  4. a unique id prefix (which must look like an id: nothing else reaches a path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from evalcore.errors import StoreError
from evalcore.store.layout import check_run_id

if TYPE_CHECKING:  # the schemas' models load when a reference is resolved, not when the store opens
    from evalcore.schemas import RunManifest


def resolve_run(ref: str, ids: list[str], manifests: Callable[[], list[RunManifest]], where: str) -> str:
    """The run id `ref` means among the runs `ids` (the module's rules); a StoreError saying why
    not, naming `where` ("store ./runs"). `manifests()` lists the readable runs' manifests,
    oldest first: read only when an id alone does not answer (`latest`, a run name)."""
    from evalcore.schemas.ids import canonical_id

    ref = canonical_id(ref) if isinstance(ref, str) else ref
    if ref == "latest":
        listed = manifests()
        if not listed:
            raise StoreError(f"{where} has no runs")
        return listed[-1].run_id
    if ref in ids:
        return ref
    named = [m.run_id for m in manifests() if isinstance(ref, str) and canonical_id(m.name) == ref]
    if len(named) > 1:
        raise StoreError(f"{ref!r} is ambiguous: {len(named)} runs have that name ({', '.join(named[:5])}); "
                         "give a run id")
    if named:
        return named[0]
    check_run_id(ref)
    matches = [i for i in ids if i.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StoreError(f"no run matches {ref!r} in {where} (see `evalcore runs`)")
    raise StoreError(f"{ref!r} is ambiguous: {', '.join(matches[:5])}")
