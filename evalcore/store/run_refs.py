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

from typing import TYPE_CHECKING

from evalcore.errors import StoreError
from evalcore.schemas.ids import canonical_id
from evalcore.store.layout import check_run_id

if TYPE_CHECKING:
    from evalcore.store.runstore import RunStore


def resolve_run(store: "RunStore", ref: str) -> str:
    """The run id `ref` means in `store` (the module's rules); a StoreError saying why not."""
    ref = canonical_id(ref) if isinstance(ref, str) else ref
    ids = store.run_ids()
    if ref == "latest":
        manifests = store.manifests()
        if not manifests:
            raise StoreError(f"store {store.root} has no runs")
        return manifests[-1].run_id
    if ref in ids:
        return ref
    named = [m.run_id for m in store.manifests() if isinstance(ref, str) and canonical_id(m.name) == ref]
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
        raise StoreError(f"no run matches {ref!r} in store {store.root} (see `evalcore runs`)")
    raise StoreError(f"{ref!r} is ambiguous: {', '.join(matches[:5])}")
