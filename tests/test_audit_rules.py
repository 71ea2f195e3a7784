"""scripts/audit_rules.py, the rule catalog's soundness audit: it runs clean on a kernel the catalog
rewrites correctly, and it reports a rewrite that is not the same kernel (a catalog whose templates
were made wrong on purpose: a bounds check loosened by one, which verification may miss and the
memory checker does not)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import audit_rules  # noqa: E402

pytestmark = pytest.mark.runtime


def test_a_sound_catalog_has_no_finding(tmp_path):
    out = tmp_path / "audit"
    r = subprocess.run([sys.executable, str(REPO / "scripts/audit_rules.py"), "kernels/examples/vector_add.cl",
                        "--configs", "3", "--rounds", "1", "--no-check", "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "0 finding(s)" in r.stdout
    table = out.with_suffix(".md").read_text()
    assert "| kernels/examples/vector_add.cl | 1 | 3 | 0 | 0 | 0 |" in table


def test_a_wrong_rewrite_is_a_finding(worker, monkeypatch):
    from kerntune.engine.checker import oclgrind_library

    if oclgrind_library() is None:
        pytest.skip("Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
    real = audit_rules.apply_catalog

    def loosened(*args, **kwargs):
        result = real(*args, **kwargs)
        result.template = result.template.replace("i < n", "i <= n")
        return result

    monkeypatch.setattr(audit_rules, "apply_catalog", loosened)
    audit = audit_rules.Audit(worker, configs=2, seed=0, rounds=1, check=True)
    audit.run_file(REPO / "kernels/examples/vector_add.cl")
    assert audit.rows[-1]["configs"] == 2
    assert audit.findings, audit.rows
    assert all(f["what"] in ("memory checker", "wrong_result", "crash") for f in audit.findings), audit.findings


def test_bad_arguments_exit_2():
    r = subprocess.run([sys.executable, str(REPO / "scripts/audit_rules.py"), "no/such/kernel.cl"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2
    assert "no such file" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.nvcc
def test_cuda_configurations_compile_or_are_pruned(worker, monkeypatch):
    """transpose optimized.cu: round 2 offers a 128-wide tile (66 KB of static shared memory, past CUDA's
    48 KB); the template's shared-memory estimate prunes it before compiling. Without the estimate the
    same configuration is a finding: the tuner would have tried it and got a compile error."""
    path = REPO / "kernels/classic/transpose/optimized.cu"
    audit = audit_rules.Audit(worker, configs=6, seed=0, rounds=2, check=False)
    audit.run_file(path)
    assert audit.findings == [] and audit.rows[-1]["pruned"] >= 1, audit.rows
    real = audit_rules.apply_catalog

    def without_estimate(*args, **kwargs):
        result = real(*args, **kwargs)
        result.template = "\n".join(ln for ln in result.template.splitlines() if not ln.startswith("shared_estimate:"))
        return result

    monkeypatch.setattr(audit_rules, "apply_catalog", without_estimate)
    blind = audit_rules.Audit(worker, configs=6, seed=0, rounds=2, check=False)
    blind.run_file(path)
    assert blind.findings and all(f["what"] == "compile error" for f in blind.findings), blind.findings
    assert "too much shared data" in blind.findings[0]["message"]
