"""The heavy tier names real tests, and each names a default-tier test that still runs in CI."""

from __future__ import annotations

import re
from pathlib import Path

from tests.heavy import HEAVY, is_heavy

ROOT = Path(__file__).resolve().parents[1]


def _exists(nodeid: str) -> bool:
    path, _, rest = nodeid.partition("::")
    source = ROOT / path
    if not source.is_file():
        return False
    func = re.sub(r"\[.*\]$", "", rest)
    return not func or re.search(rf"^def {re.escape(func)}\(", source.read_text(encoding="utf-8"), re.M) is not None


def test_every_heavy_test_and_its_stand_in_exist():
    missing = [n for pair in HEAVY.items() for n in pair if not _exists(n)]
    assert not missing, missing


def test_no_stand_in_is_heavy_itself():
    assert not [n for n in HEAVY.values() if is_heavy(n)]


def test_the_match_is_by_whole_test_name():
    assert is_heavy("tests/scale/test_ray_score.py::test_ray_scoring_on_an_s3_store")
    assert is_heavy("tests/reliability/test_fuzz_import.py::test_100mb_import_in_bounded_memory[json]")
    assert not is_heavy("tests/reliability/test_concurrency.py::test_concurrent_writers_and_reader[local]")
    assert not is_heavy("tests/scale/test_ray_score.py::test_ray_scoring_on_an_s3_store_twice")


def test_only_the_s3_copies_of_the_dual_store_files_are_heavy():
    assert is_heavy("tests/test_store.py::test_layout_and_roundtrip[s3]")
    assert is_heavy("tests/test_store.py::test_run_ids_cannot_escape[s3-bad5]")
    assert not is_heavy("tests/test_store.py::test_run_ids_cannot_escape[local-bad5]")
    assert not is_heavy("tests/test_store_s3.py::test_a_stale_pointer_write_is_refused")
