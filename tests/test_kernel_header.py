"""A handed-back kernel carries its launch in kerntune's header (grid, block, shared memory, compile
options, entry point): a best.cl copied next to the user's kernel runs with that launch when the spec has
no ``launches`` entry for it, instead of the spec's launch (which may launch it wrongly)."""

from __future__ import annotations

import pytest

from kerntune.errors import KerntuneError
from kerntune.kernelfile import load_kernel
from kerntune.source.normalize import strip_header
from kerntune.spec.model import LaunchSpec
from kerntune.tuner.kernel_files import read_header, with_header
from tests.conftest import run_cli, write

# the original does four elements per work-item; the tuned file one, on a four times larger grid
SPEC = """
kernel: scale
args:
  - {name: x, dtype: fp32, shape: [n], intent: in}
  - {name: y, dtype: fp32, shape: [n], intent: out}
  - {name: n, dtype: int32, value: n}
launch: {grid: ["ceil_div(n, 256)"], block: [64]}
compile_options: {opencl: ["-cl-std=CL1.2"]}
reference: ref.py:scale
shapes:
  - {label: 4K, n: 4096}
  - {label: odd, n: 1000}
"""
ORIGINAL = """
__kernel void scale(__global const float* x, __global float* y, int n) {
    int i = get_global_id(0) * 4;
    for (int k = i; k < i + 4 && k < n; ++k) y[k] = 2.0f * x[k];
}
"""
TUNED = """
__kernel void scale(__global const float* x, __global float* y, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] + x[i];
}
"""
LAUNCH = LaunchSpec(grid=["ceil_div(n, 64)"], block=[64], shared_mem=0)


def _tuned(tmp_path, what="kerntune: general configuration BLOCK=64, 1.30x geomean over the original",
           options=("-cl-std=CL1.2", "-cl-mad-enable"), launch=LAUNCH):
    write(tmp_path, "spec.yaml", SPEC)
    write(tmp_path, "ref.py", "def scale(x):\n    return 2 * x\n")
    write(tmp_path, "scale.cl", ORIGINAL)
    return write(tmp_path, "best.cl", with_header(TUNED.lstrip("\n"), what, launch, options))


def test_header_round_trip():
    launch = LaunchSpec(grid=["ceil_div(T * H, 4)", 2], block=[128, 1], shared_mem="n * 4")
    text = with_header("__kernel void k() {}\n", "kerntune: shape decode\n// entry point: k2", launch,
                       ("-DX=1", "-cl-fast-relaxed-math"))
    h = read_header(text)
    assert (h.grid, h.block, h.shared_mem) == (["ceil_div(T * H, 4)", 2], [128, 1], "n * 4")
    assert h.compile_options == ["-DX=1", "-cl-fast-relaxed-math"] and h.kernel == "k2"
    # written again (a handed-back file optimized again): one header, the new one
    again = with_header(text, "kerntune: no candidate beat the original", launch, ())
    assert again.count("// launch:") == 1 and "entry point" not in again and "// compile options: none" in again
    assert strip_header(again) == "__kernel void k() {}\n"
    assert read_header("// a user's comment\n// launch: grid [1], block [1], dynamic shared memory 0 B "
                       "(expressions of the sizes)\n") is None
    # the launch line written by hand, without kerntune's words after the shared memory
    short = "// kerntune: by hand\n// launch: grid ['ceil_div(n, 64)'], block [64], dynamic shared memory 0 B\n"
    assert read_header(short).block == [64]


def test_a_header_without_its_first_line_is_not_silently_ignored(tmp_path):
    """Header lines copied from a best.cl without the '// kerntune' line above them: read as comments,
    the file would run under the spec's launch and options while its author expects the header's."""
    path = _tuned(tmp_path)
    path.write_text(path.read_text().split("\n", 1)[1])
    assert path.read_text().startswith("// launch: ")
    with pytest.raises(KerntuneError) as e:
        load_kernel(path)
    assert "'// kerntune: ...'" in e.value.message
    r = run_cli("bench", str(path), "--device", "cpu", "--repeats", "3")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "first line" in r.stderr, r.stderr


def test_load_kernel_takes_the_header_launch(tmp_path):
    kf = load_kernel(_tuned(tmp_path))
    inst = kf.instance()
    assert inst.launch.grid == ["ceil_div(n, 64)"] and inst.launch.block == [64]
    # the spec's options once, the header's beyond them after
    assert inst.options == ("-cl-std=CL1.2", "-cl-mad-enable")
    # a file without a header keeps the spec's launch
    assert load_kernel(tmp_path / "scale.cl").instance().launch is None


def test_the_specs_launches_entry_wins(tmp_path):
    path = _tuned(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec.read_text() + 'launches:\n  best: {grid: ["ceil_div(n, 32)"], block: [32]}\n')
    kf = load_kernel(path)
    assert kf.header is None and kf.instance().launch.block == [32]


def test_a_header_edited_into_nonsense_is_a_clear_error(tmp_path):
    path = _tuned(tmp_path)
    path.write_text(path.read_text().replace("grid ['ceil_div(n, 64)']", "grid ['ceil_div(n, 64)'"))
    with pytest.raises(KerntuneError) as e:
        load_kernel(path)
    assert "header" in e.value.message and "launches" in e.value.hint
    r = run_cli("bench", str(path), "--device", "cpu")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "launch line cannot be read" in r.stderr


def test_a_header_for_another_spec_is_refused(tmp_path):
    path = _tuned(tmp_path, launch=LaunchSpec(grid=["ceil_div(T * H, 64)"], block=[64], shared_mem=0))
    with pytest.raises(KerntuneError) as e:
        load_kernel(path)
    assert "'H', 'T' is not a declared size" in e.value.message and "--spec" in e.value.hint


def test_bench_runs_a_copied_best_file_with_its_own_launch(tmp_path):
    """Under the spec's launch the tuned kernel writes a quarter of y (a wrong result); with its header's,
    it is correct, and bench says where the launch came from."""
    path = _tuned(tmp_path)
    r = run_cli("bench", str(path), "--against", str(tmp_path / "scale.cl"), "--device", "cpu", "--repeats", "5",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "launch  best.cl: grid ['ceil_div(n, 64)'], block [64]" in r.stdout
    assert "from the kerntune header" in r.stdout and "correct on" in r.stdout
    path.write_text(strip_header(path.read_text()))
    r = run_cli("bench", str(path), "--device", "cpu", "--repeats", "5", cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "wrong" in r.stderr.lower()
