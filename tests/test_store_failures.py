"""The run database when the disk fills up or the run is on read-only storage: the user's to fix,
said so, and nothing written before is lost (adversarial tour, 2026-12-05)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.store import RunStore
from tests.conftest import run_cli


def test_a_full_disk_is_a_file_error_and_keeps_what_was_written(tmp_path):
    """A disk that filled up during `tune` ended it with exit 70, "a bug in kerntune", and no word that
    the run was kept. SQLite's page limit stands in for the disk here: the same SQLITE_FULL."""
    store = RunStore.in_dir(tmp_path / "run", create=True)
    store.db.execute("PRAGMA max_page_count = 20")
    written = 0
    with pytest.raises(KerntuneError) as caught:
        for i in range(1000):
            store.add(f"k{i}", {"i": i}, "ok", True, message="x" * 1900)
            written += 1
    e = caught.value
    assert e.code is ErrorCode.FILE and "cannot write the run database" in e.message and "full" in e.message
    assert "--resume" in e.hint and written > 0
    store.close()
    assert RunStore.in_dir(tmp_path / "run", readonly=True).counted() == written    # nothing written is lost


def _read_only(path):
    """Bind-mount ``path`` read-only over itself (root and a mount namespace that allows it), else skip."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a read-only folder")
    if subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts are not allowed here")
    if subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(path)])
        pytest.skip("read-only remounts are not allowed here")


def test_resuming_a_run_on_read_only_storage_does_not_call_it_damaged(tmp_path):
    """`tune --resume` of a run on read-only storage said its database was "damaged or not kerntune's"."""
    ro = tmp_path / "ro"
    run = ro / "run"
    store = RunStore.in_dir(run, create=True)
    store.set("settings", {})
    store.close()
    _read_only(ro)
    try:
        r = run_cli("tune", "--resume", str(run))
    finally:
        subprocess.run(["umount", str(ro)])
    assert r.returncode == 2, r.stderr
    assert "cannot write the run database" in r.stderr and "damaged" not in r.stderr, r.stderr


@pytest.mark.parametrize("key,value", [("settings", "x"), ("shapes", 5), ("device", "x"), ("space_size", "many"),
                                       ("stop_reason", 5), ("kernel_digests", [1]), ("original", "x"),
                                       ("baseline", {"status": "bogus"}), ("test", {"candidates": "x"})])
def test_a_hand_edited_database_entry_is_a_damaged_record(tmp_path, key, value):
    """A tuning.db meta entry edited into another type made `show` and `report` exit 70, "a bug in
    kerntune" (a ValidationError, AttributeError or TypeError from deep in the reader)."""
    import json

    from tests.conftest import REPO

    run = tmp_path / "run"
    r = run_cli("kt-cache", "import", str(REPO / "bench/data/gemvt-catalog-r1024-c1024.json.gz"), "--run-dir", str(run))
    assert r.returncode == 0, r.stderr
    store = RunStore.in_dir(run)
    store.set(key, value)
    if key == "test":
        store.set("stop_reason", "budget spent")     # a test is read once the search stopped
    store.close()
    for command in (["show", str(run)], ["report", str(run), "--out-dir", str(tmp_path / "rep")],
                    ["show", str(run), "--json"]):
        r = run_cli(*command)
        text = r.stdout + r.stderr
        assert r.returncode == 2, text
        assert f"meta entry '{key}' is not a valid kerntune record" in text and "bug" not in text, text
    assert json.loads(run_cli("show", str(run), "--json").stdout)["error"]["code"] == "run"


def test_a_resume_confirms_as_the_run_was_started(tmp_path):
    """`tune --resume` confirmed the winners with the defaults (under the memory checker, 100 repeats,
    top 3), whatever --no-memcheck, --final-repeats and --top-k the run was started with."""
    from tests.conftest import REPO

    source, run = tmp_path / "source", tmp_path / "run"
    r = run_cli("kt-cache", "import", str(REPO / "bench/data/gemvt-catalog-r1024-c1024.json.gz"), "--run-dir",
                str(source))
    assert r.returncode == 0, r.stderr
    r = run_cli("tune", "--device", f"replay:{source}", "--strategy", "random", "--budget", "2", "--run-dir", str(run),
                "--final-repeats", "7", "--top-k", "1", "--no-memcheck", "--json")
    assert r.returncode == 0, r.stderr

    def confirm_settings():
        store = RunStore.in_dir(run, readonly=True)
        try:
            return store.get("confirm_settings")
        finally:
            store.close()

    assert confirm_settings() == {"final_repeats": 7, "top_k": 1, "memcheck": False}
    r = run_cli("tune", "--resume", str(run), "--budget", "3", "--json")
    assert r.returncode == 0, r.stderr
    assert confirm_settings() == {"final_repeats": 7, "top_k": 1, "memcheck": False}
    r = run_cli("tune", "--resume", str(run), "--budget", "4", "--top-k", "2", "--memcheck", "--json")   # given: used
    assert r.returncode == 0, r.stderr
    assert confirm_settings() == {"final_repeats": 7, "top_k": 2, "memcheck": True}
