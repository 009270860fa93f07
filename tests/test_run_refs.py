"""Which run a typed reference means (RunStore.resolve, evalcore/store/run_refs.py): an exact
match wins over a prefix (issue 34, round 4: `score base` was "ambiguous" with runs named `base`
and `base2`, since "base" begins both ids)."""

from __future__ import annotations

import unicodedata

import pytest

from evalcore.errors import StoreError


def _run(store, name):
    from evalcore import __version__
    from evalcore.schemas import RunManifest
    from evalcore.store import FORMAT_VERSION, new_run_id

    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=new_run_id(name), name=name, status="complete",
                           evalcore_version=__version__, methods=[], counts={"questions": 0, "responses": 0})
    with store.staged_run(manifest) as writer:
        writer.write_manifest(manifest)
    return manifest.run_id


def test_an_exact_name_wins_over_a_prefix(store):
    base, base2 = _run(store, "base"), _run(store, "base2")
    assert base.startswith("base-") and base2.startswith("base2-")
    assert store.resolve("base") == base and store.resolve(" base ") == base
    assert store.resolve("base2") == base2
    assert store.resolve(base2[:8]) == base2  # a unique id prefix still works
    with pytest.raises(StoreError, match="ambiguous"):
        store.resolve("bas")  # a prefix of both, and nobody's name


def test_an_exact_id_wins_over_a_name_and_one_name_twice_is_ambiguous(store):
    first = _run(store, "alpha")
    impostor = _run(store, first)  # a run whose name is the other run's id
    assert store.resolve(first) == first
    again = _run(store, "alpha")
    with pytest.raises(StoreError, match="2 runs have that name"):
        store.resolve("alpha")
    assert store.resolve(again) == again and store.resolve(impostor) == impostor


def test_a_name_that_is_no_id_resolves(store):
    name = "Normandie é run"
    run = _run(store, name)
    assert store.resolve(name) == run
    assert store.resolve(unicodedata.normalize("NFD", name)) == run
    with pytest.raises(StoreError, match="invalid run id"):
        store.resolve("../elsewhere")  # matches no name, and is no id: refused before any path


def test_the_cli_takes_the_exact_name(tmp_path):
    from typer.testing import CliRunner

    from evalcore.cli.main import app
    from evalcore.store import RunStore

    store = RunStore(tmp_path / "runs")
    base = _run(store, "base")
    _run(store, "base2")
    res = CliRunner().invoke(app, ["--store", str(store.root), "show", "base", "--json"])
    assert res.exit_code == 0, res.output
    assert base in res.stdout
