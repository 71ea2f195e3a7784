"""kerntune's own process runs NumPy's BLAS on one thread (kerntune.hostblas): after a BLAS call, no helper
thread is left spinning on a core that a CPU device's next evaluation needs. Checked in fresh processes,
by the CPU time the process uses while it sleeps right after a solve the size of the search model's."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.host

SPIN = """
import time
import numpy as np
from kerntune import hostblas
limited = hostblas.one_host_thread() if {limit} else False
rng = np.random.default_rng(0)
a = rng.random((226, 226)); a = a @ a.T + np.eye(226); b = rng.random((226, 78))
spun = []
for _ in range(3):
    np.linalg.solve(a, b)
    c0 = time.process_time(); time.sleep(0.3); spun.append(time.process_time() - c0)
print(limited, min(spun))
"""


def _spin(limit: bool, **env: str) -> tuple[bool, float]:
    environ = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", SPIN.format(limit=limit)], capture_output=True, text=True,
                       env={**environ, **env}, timeout=120)
    assert r.returncode == 0, r.stderr
    limited, spun = r.stdout.split()
    return limited == "True", float(spun)


def test_no_blas_thread_spins_after_a_call():
    limited, spun = _spin(limit=False)
    if spun < 0.02:
        pytest.skip(f"this BLAS leaves no thread spinning here ({spun:.3f} s of CPU while asleep): nothing to stop")
    limited, after = _spin(limit=True)
    assert limited, "an OpenBLAS that spins, but one_host_thread found no setter in it"
    assert after < spun / 4, f"still {after:.3f} s of CPU while asleep after a solve (without: {spun:.3f} s)"


def test_a_thread_count_the_user_set_is_kept():
    limited, _ = _spin(limit=True, OPENBLAS_NUM_THREADS="2")
    assert not limited
