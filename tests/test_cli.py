"""The real command line, in subprocesses: exit statuses, messages, --json."""

import json
import shutil

import pytest

from tests.conftest import REPO, run_cli, write

EXAMPLES = REPO / "kernels" / "examples"


def test_help_teaches():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("devices", "init", "check", "bench"):
        assert cmd in r.stdout
    r = run_cli("bench", "--help")
    assert "--against" in r.stdout and "--device" in r.stdout and "--json" in r.stdout


def test_a_command_group_without_its_command_is_a_usage_error():
    # the help is printed, as for `kerntune` alone, but the command line was incomplete: exit 2
    assert run_cli().returncode == 0
    for group, commands in (("export", "pairs, traces"), ("kt-cache", "export, import"), ("score", "fast-p, reward")):
        r = run_cli(group)
        assert r.returncode == 2 and "Usage" in r.stdout, (group, r.stdout, r.stderr)
        assert f"`kerntune {group}` needs a command: {commands}" in r.stderr and "Traceback" not in r.stderr
        r = run_cli(group, "nope")
        assert r.returncode == 2 and f"`kerntune {group}` takes one of: {commands}" in r.stderr, r.stderr


def test_option_values_without_meaning_are_refused_before_anything_runs():
    kernel = str(EXAMPLES / "vector_add.cl")
    for args in (("bench", kernel, "--seed", "-1"), ("tune", kernel, "--seed", str(2**63)),
                 ("optimize", kernel, "--final-repeats", "5")):
        r = run_cli(*args)
        assert r.returncode == 2 and args[-2] in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_devices_json_lists_a_usable_cpu():
    r = run_cli("devices", "--json", "--profiles")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert any(d["kind"] == "cpu" and not d["problem"] for d in data["devices"])
    # the listing probes what the rules read: each usable OpenCL device's native vector width
    usable = [d for d in data["devices"] if d["backend"] == "opencl" and not d["problem"]]
    assert usable and all(d["vector_width"] in (2, 4, 8, 16) for d in usable), usable
    table = run_cli("devices")
    assert table.returncode == 0 and "vector" in table.stdout and "groups" in table.stdout, table.stdout
    assert {"h100", "h200", "a100", "l4", "rtx4090"} <= {p["id"].split(":")[1] for p in data["profiles"]}



def test_a_machine_without_pyopencl_still_lists_devices_and_says_what_to_install(tmp_path):
    """A CUDA box where PyOpenCL does not import (it happened on the first GPU run): the listing
    must not fail (it would hide the GPUs); a command that needs OpenCL says what to install."""
    import os
    import subprocess

    from tests.conftest import KERNTUNE, VECTOR_ADD

    # an import hook, not a shadow package on PYTHONPATH: kerntune's workers put the folder holding
    # kerntune first on sys.path, and in an installed copy that is site-packages, which holds PyOpenCL
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text(
        "import sys\n"
        "class NoPyOpenCL:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyopencl':\n"
        "            raise ImportError('simulated: no pyopencl on this machine')\n"
        "sys.meta_path.insert(0, NoPyOpenCL())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(shadow), os.environ.get("PYTHONPATH")]))}

    def cli(*args):
        return subprocess.run([*KERNTUNE, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    r = cli("devices", "--json")
    assert r.returncode == 0, r.stderr
    assert not any(d["backend"] == "opencl" for d in json.loads(r.stdout)["devices"])
    r = cli("bench", str(VECTOR_ADD), "--device", "cpu")
    assert r.returncode == 3 and "Traceback" not in r.stderr   # 3: a device error
    assert "no OpenCL CPU device found" in r.stderr and "pyopencl" in r.stderr

def test_init_writes_a_spec_that_checks(tmp_path):
    k = tmp_path / "vector_add.cl"
    shutil.copy(EXAMPLES / "vector_add.cl", k)
    r = run_cli("init", str(k))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "vector_add.yaml").read_text()
    assert "intent: out" in text and "intent: in" in text and "value: n" in text
    r = run_cli("init", str(k))
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    r = run_cli("check", str(k), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["mode"] == "device" and report["launches"][0]["problems"] == []


def test_init_inline_and_todo(tmp_path):
    k = write(tmp_path, "search.cu", """
        extern "C" __global__ void search(float* y, int* hit, const float* x, float v, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] += v * x[i];
            int j = 0;
            while (j < n && x[j] < v) j++;
            hit[3 * j] = i;
        }
    """)
    r = run_cli("init", str(k), "--inline")
    assert r.returncode == 0, r.stderr
    text = k.read_text()
    assert text.startswith("/* kerntune\n") and "intent: inout" in text
    # hit's index comes out of a data-dependent loop: its length cannot be known, and init says so
    assert "shape: [TODO]" in text and "cannot bound" in text and "TODO" in r.stderr
    assert "(2 TODOs to fill in)" in r.stderr, r.stderr
    r = run_cli("check", str(k))
    assert r.returncode == 2 and "TODO" in r.stderr and "Traceback" not in r.stderr


def test_init_counts_one_todo_in_the_singular(tmp_path):
    """'(1 TODOs to fill in)' on a kernel with one input index init cannot bound (a tour's was the 3x3
    convolution's halo read, which init now bounds)."""
    k = write(tmp_path, "gather.cl", """
        __kernel void gather(__global float* out, __global const float* x, const int n)
        { int i = get_global_id(0); if (i < n) out[i] = x[mad24(i, 3, 1)]; }
    """)
    r = run_cli("init", str(k))
    assert r.returncode == 0, r.stderr
    assert "(1 TODO to fill in)" in r.stderr, r.stderr


def test_check_offline_cuda():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    r = run_cli("check", str(EXAMPLES / "row_sum.cu"), "--offline", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["mode"] == "offline" and report["resources"]["source"] == "ptxas"
    assert report["device"]["name"].startswith("NVIDIA H100")
    assert all(launch["occupancy"] > 0 for launch in report["launches"])


def test_check_offline_resource_limit(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    src = (REPO / "tests/data/spill.cu").read_text()
    k = write(tmp_path, "spill.cu", src)
    spec = (REPO / "tests/data/spill.yaml").read_text().replace("block: [32]", "block: [2048]")
    write(tmp_path, "spill.yaml", spec)
    r = run_cli("check", str(k), "--offline")
    assert r.returncode == 4 and "2048 threads per block exceed" in r.stderr


def test_bench_json_and_against(tmp_path):
    r = run_cli("bench", str(EXAMPLES / "row_sum.cl"), "--repeats", "5", "--warmup", "1", "--seed", "3",
                "--shape", "tall", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["seed"] == 3 and report["kernel"]["status"] == "ok"
    assert [row["label"] for row in report["rows"]] == ["tall"]
    assert report["rows"][0]["kernel"]["stats"]["n"] == 5

    other = write(tmp_path, "row_sum.cl", (EXAMPLES / "row_sum.cl").read_text().replace(
        "acc += row[c];", "acc = acc + row[c];"))
    r = run_cli("bench", str(EXAMPLES / "row_sum.cl"), "--against", str(other), "--spec",
                str(EXAMPLES / "row_sum.yaml"), "--repeats", "5", "--warmup", "1", "--shape", "square")
    assert r.returncode == 0, r.stderr
    assert "speedup" in r.stdout and "reference kernel's outputs" in r.stdout
    # 5 paired runs bound no shape's speedup at 95%, so the geomean claims nothing either and says why
    said = " ".join(r.stdout.split())
    assert "[0.00, inf] (95% confidence interval): not distinguishable from noise" in said, said
    assert "5 paired run(s) on a shape, too few for an interval" in said and "--repeats 6 or more" in said, said


def test_bench_wrong_kernel_exits_1(tmp_path):
    k = write(tmp_path, "vector_add.cl", (EXAMPLES / "vector_add.cl").read_text().replace("a[i] + b[i]", "a[i] - b[i]"))
    shutil.copy(EXAMPLES / "vector_add.yaml", tmp_path / "vector_add.yaml")
    shutil.copy(EXAMPLES / "reference.py", tmp_path / "reference.py")
    r = run_cli("bench", str(k), "--repeats", "3")
    assert r.returncode == 1
    assert "WRONG" in r.stdout and "wrong result" in r.stderr and "Traceback" not in r.stderr
    # by how much, where, on which inputs: the numbers, not only the word
    assert "c: tolerance:" in r.stderr and "max abs err" in r.stderr and "first at [" in r.stderr, r.stderr


@pytest.mark.parametrize("command", [pytest.param(("check",), marks=pytest.mark.runtime),
                                     ("bench", "--repeats", "3"),
                                     ("optimize", "--rounds", "1", "--evaluations", "2")])
def test_a_kernel_that_does_not_compile_is_named_at_its_line(tmp_path, command):
    # 'half' is an OpenCL type: the compiler's error, at the file's own line, and nothing the binding adds.
    # Each runtime writes its log its own way (Intel's numbers its programs, PoCL names a file of its
    # cache): `check` is marked `runtime`, so CI's PoCL pass reads PoCL's real log too
    k = write(tmp_path, "vector_add.cl", (EXAMPLES / "vector_add.cl").read_text().replace(
        "int i = get_global_id(0);", "int i = get_global_id(0);\n    int half = i;"))
    shutil.copy(EXAMPLES / "vector_add.yaml", tmp_path / "vector_add.yaml")
    shutil.copy(EXAMPLES / "reference.py", tmp_path / "reference.py")
    line = k.read_text().splitlines().index("    int half = i;") + 1
    extra = ("--run-dir", str(tmp_path / "run")) if command[0] == "optimize" else ()
    r = run_cli(command[0], str(k), "--device", "cpu", *command[1:], *extra)
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert f"{k}:{line}:" in r.stderr and "error" in r.stderr
    assert "BUILD_PROGRAM_FAILURE" not in r.stderr and "pyopencl" not in r.stderr.lower()
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args,status,needle", [
    (["bench", "nope.cl"], 2, "not found"),
    (["bench", "README.md"], 2, "cannot tell the language"),
    # a folder was "cannot tell the language of kernels/examples", as if its name were the problem
    (["check", str(EXAMPLES)], 2, f"{EXAMPLES} is a folder, not a kernel file"),
    # tune's -o is --option, where export's and kt-cache's -o is the output: 'tune ... -o run1' said only
    # "is not KEY=VALUE"
    (["tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec", str(EXAMPLES / "vector_add.yaml"),
      "-o", "run1"], 2, "strategy option 'run1' is not KEY=VALUE\nhint: -o is --option, a strategy's KEY=VALUE"),
    (["init", str(EXAMPLES)], 2, f"{EXAMPLES} is a folder, not a kernel file"),
    (["bench", str(EXAMPLES / "vector_add.cl"), "--device", "banana"], 2, "cannot understand device"),
    (["bench", str(EXAMPLES / "vector_add.cl"), "--device", "opencl:9:9"], 3, "no device opencl:9:9"),
    (["bench", str(EXAMPLES / "vector_add.cl"), "--device", "0"], 3, "cannot run on CUDA device"),
    (["bench", str(EXAMPLES / "vector_add.cl"), "--shape", "huge"], 2, "no spec shape matches"),
    # one unknown among known ones was dropped without a word; the hint gives each shape's sizes too
    (["bench", str(EXAMPLES / "vector_add.cl"), "--shape", "small", "--shape", "huge"], 2,
     "no spec shape matches --shape huge\nhint: --shape takes a label or its sizes, as the spec lists them: "
     "small (n=4096)"),
    (["check", str(EXAMPLES / "vector_add.cu"), "--target", "nosuchgpu", "--offline"], 2, "unknown device profile"),
    # a spec for another kernel: it came back as a compile failure (exit 4), twice in bench
    (["bench", str(EXAMPLES / "vector_add.cl"), "--spec", str(EXAMPLES / "row_sum.yaml")], 2,
     "no kernel named 'row_sum' in the source (kernels found: vector_add)"),
])
def test_bad_input_is_a_clear_error(args, status, needle):
    r = run_cli(*args)
    assert r.returncode == status, (r.stdout, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("device", ["gpu:x", "cuda:x", "opencl:a", "cpu:1", "-1", ""])
def test_a_malformed_device_is_a_clear_error_in_tune_and_bench(device, tmp_path):
    spec = str(EXAMPLES / "vector_add.yaml")
    for args in (["bench", str(EXAMPLES / "vector_add.cu")], ["bench", str(EXAMPLES / "vector_add.cl")],
                 ["tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec", spec, "--run-dir",
                  str(tmp_path / "run")]):
        r = run_cli(*args, "--device", device)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"error: cannot understand device '{device}'\nhint: --device takes a CUDA ordinal" in r.stderr
        assert not (tmp_path / "run").exists()


def test_a_missing_cuda_device_hints_at_cuda_devices_only(tmp_path):
    """`bench kernel.cu --device 7` on a machine with no GPU answered 'hint: devices here: opencl:0:0, ...':
    devices that refuse a CUDA kernel. The hint names the kernel's kind of device, or says there is none."""
    from kerntune.engine.devices import all_devices

    cuda = [d.id for d in all_devices() if d.backend != "opencl"]
    for args in (["bench", str(EXAMPLES / "vector_add.cu")],
                 ["tune", str(REPO / "templates/examples/vector_add.cu.j2"), "--spec", str(EXAMPLES / "vector_add.yaml"),
                  "--run-dir", str(tmp_path / "run")]):
        r = run_cli(*args, "--device", "cuda:77")
        assert r.returncode == 3 and "error: no device cuda:77" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert "devices here: opencl" not in r.stderr
        if cuda:
            assert f"hint: CUDA devices here: {', '.join(cuda)}." in r.stderr
        else:
            assert "hint: no CUDA GPU was found here" in r.stderr and "a CUDA kernel needs one" in r.stderr
    r = run_cli("bench", str(EXAMPLES / "vector_add.cl"), "--device", "opencl:9:9")
    assert r.returncode == 3 and "hint: OpenCL devices here: opencl:" in r.stderr, r.stderr


def test_check_finds_the_reference_function(tmp_path):
    """check said 'spec ... is valid' (exit 0) of a spec whose reference file or function is not there."""
    k = write(tmp_path, "vector_add.cl", (EXAMPLES / "vector_add.cl").read_text())
    shutil.copy(EXAMPLES / "reference.py", tmp_path / "reference.py")
    spec = (EXAMPLES / "vector_add.yaml").read_text()
    assert "reference.py:vector_add" in spec
    for broken, needle in (("nope.py:vector_add", f"relative to the spec's folder, {tmp_path.resolve()}"),
                           ("reference.py:nothere", "no function 'nothere'")):
        write(tmp_path, "vector_add.yaml", spec.replace("reference.py:vector_add", broken))
        r = run_cli("check", str(k), "--device", "cpu")
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_json_errors(tmp_path):
    r = run_cli("bench", "nope.cl", "--json")
    assert r.returncode == 2
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "file" and "not found" in err["message"]


def test_bad_spec_points_at_the_line(tmp_path):
    k = write(tmp_path, "vector_add.cl", (EXAMPLES / "vector_add.cl").read_text())
    spec = (EXAMPLES / "vector_add.yaml").read_text().replace("dtype: int32", "dtype: integer")
    write(tmp_path, "vector_add.yaml", spec)
    r = run_cli("check", str(k))
    assert r.returncode == 2
    assert "vector_add.yaml:7: args[3].dtype" in r.stderr and "found 'integer'" in r.stderr


def test_usage_errors_honour_json_and_debug_goes_anywhere():
    r = run_cli("bench", "--json")                               # a missing argument: click's error, as JSON
    assert r.returncode == 2 and r.stderr == ""
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "usage" and "kernel_file" in err["message"].lower() and "--help" in err["hint"]
    r = run_cli("bench", str(EXAMPLES / "vector_add.cl"), "--repeats", "many", "--json")
    assert r.returncode == 2 and "--repeats" in json.loads(r.stdout)["error"]["message"]
    r = run_cli("bench", "nope.cl", "--debug")                   # --debug after the subcommand is --debug
    assert r.returncode == 2 and "not found" in r.stderr and "No such option" not in r.stderr
    r = run_cli("nosuchcommand")
    assert r.returncode == 2 and "No such command" in r.stderr and "Traceback" not in r.stderr


def test_bench_json_is_one_document_when_the_kernel_fails(tmp_path):
    k = write(tmp_path, "vector_add.cl", (EXAMPLES / "vector_add.cl").read_text().replace("a[i] + b[i]", "a[i] - b[i]"))
    shutil.copy(EXAMPLES / "vector_add.yaml", tmp_path / "vector_add.yaml")
    shutil.copy(EXAMPLES / "reference.py", tmp_path / "reference.py")
    r = run_cli("bench", str(k), "--repeats", "3", "--json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)                                   # exactly one JSON document
    assert doc["kernel"]["status"] == "wrong_result" and doc["error"]["code"] == "verify"


@pytest.mark.parametrize("change,needle,line", [
    (("{{ EPT }} element", "{{ NOPE }} element"), "undefined variable: 'NOPE' is undefined", 13),
    (("{{ EPT }} element", "{{ ''.__class__ }} element"), "sandbox forbids", 13),
    (("{{ EPT }} element", "{{ 'A' * 10**12 }} element"), "'*' would build", 13),
    (("restrictions:", "flags:\n  opencl: {'-cl-fast-relaxed-math': 'FAST == 1'}\nrestrictions:"),
     "'FAST == 1' uses ['FAST']", 8),
])
def test_template_mistakes_are_template_errors_with_file_and_line(tmp_path, change, needle, line):
    text = (REPO / "templates/examples/vector_add.cl.j2").read_text()
    assert change[0] in text
    t = write(tmp_path, "va.cl.j2", text.replace(change[0], change[1], 1))
    r = run_cli("tune", str(t), "--spec", str(EXAMPLES / "vector_add.yaml"), "--device", "cpu", "--budget", "2",
                "--repeats", "3", "--warmup", "1", "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2, r.stderr
    assert f"va.cl.j2:{line}: " in r.stderr and needle in r.stderr and "bug in kerntune" not in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("script,args", [("bench_library.py", ["--device", "7"]),
                                         ("optimize_library.py", ["--device", "7", "--out", "/nonexistent/x"]),
                                         ("time_evaluation.py", ["kernels/sglang/silu_and_mul/silu_and_mul.cu",
                                                                 "--shape", "7b-decode-T1", "--device", "7"])])
def test_the_gpu_scripts_answer_a_missing_device_with_a_message(script, args):
    """The benchmark scripts of a GPU run end on kerntune's own errors with the message and hint,
    exit 1, no traceback (scripts/script_errors.py)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "error: no device cuda:7" in r.stderr and "hint:" in r.stderr


def test_tune_without_a_spec_says_where_the_templates_spec_is(tmp_path):
    r = run_cli("tune", "templates/classic/histogram.cl.j2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--spec kernels/classic/histogram/spec.yaml" in r.stderr        # the spec under kernels/, named
    r = run_cli("tune", str(tmp_path / "gone.cl.j2"))
    assert r.returncode == 2 and "template not found" in r.stderr           # the missing template comes first
    t = write(tmp_path, "lonely.cl.j2", (REPO / "templates/examples/vector_add.cl.j2").read_text())
    r = run_cli("tune", str(t))
    assert r.returncode == 2 and "kerntune init KERNEL" in r.stderr


# --- option values that make no sense: refused up front (exit 2, the option named), never a wrong verdict ----
VA_CL = str(EXAMPLES / "vector_add.cl")
VA_TEMPLATE = str(REPO / "templates/examples/vector_add.cl.j2")
VA_SPEC = str(EXAMPLES / "vector_add.yaml")


@pytest.mark.parametrize("args,needle", [
    # a timeout of 0 or less failed every step at once: `score reward --timeout 0` said 'compiles no', exit 0
    (["score", "reward", VA_CL, "--baseline", VA_CL, "--device", "cpu", "--timeout", "0"],
     "Invalid value for '--timeout': must be a number of seconds above 0 (e.g. 60 or 0.5), not 0"),
    (["bench", VA_CL, "--device", "cpu", "--timeout", "-1"], "'--timeout': must be a number of seconds above 0"),
    (["check", VA_CL, "--device", "cpu", "--timeout", "nan"], "'--timeout': must be a number of seconds above 0"),
    (["regress", VA_CL, "--baseline", "nope.json", "--timeout", "0"], "'--timeout': must be a number of seconds"),
    (["tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--timeout", "-1"], "'--timeout': must be"),
    (["optimize", VA_CL, "--device", "cpu", "--timeout", "inf"], "'--timeout': must be a number of seconds"),
    (["optimize", VA_CL, "--device", "cpu", "--llm-timeout", "inf"], "'--llm-timeout': must be a number"),
    (["tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--time-limit", "0"],
     "the time limit '0' leaves no time"),
    (["optimize", VA_CL, "--device", "cpu", "--time-limit", "0m"], "the time limit '0m' leaves no time"),
    # nan and inf: `score fast-p --p nan` printed 'fast_nan = 0.000', --min-speedup inf kept nothing
    (["score", "fast-p", "pairs.jsonl", "--p", "nan"], "--p must be a finite number, 0 or more, found nan"),
    (["score", "fast-p", "pairs.jsonl", "--p", "1", "--p", "inf"], "--p must be a finite number"),
    (["export", "pairs", "runs", "--min-speedup", "inf"], "'--min-speedup': must be a finite number, not inf"),
    (["score", "reward", VA_CL, "--baseline", VA_CL, "--min-speedup", "inf"], "'--min-speedup': must be a finite"),
    # strategy options are checked against what they mean (nsga2's population_size=1 was a ValueError, exit 70)
    (["tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--strategy", "nsga2", "--option",
      "population_size=1"], "strategy option population_size='1': expected an integer, at least 2 (default 16)"),
    (["tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--strategy", "local", "--option", "start=bogus"],
     "strategy option start='bogus': expected one of 'baseline', 'random'"),
    (["tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--strategy", "random", "--option",
      "max_attempts=0"], "max_attempts='0': expected an integer, at least 1"),
])
def test_senseless_option_values_are_usage_errors(tmp_path, args, needle):
    r = run_cli(*args, *(["--run-dir", str(tmp_path / "run")] if args[0] in ("tune", "optimize") else []),
                cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr and "hint:" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_kt_cache_import_of_a_binary_file_or_into_a_file(tmp_path):
    binary = tmp_path / "g.json"
    binary.write_bytes(bytes(range(128, 256)) * 3)      # not UTF-8: was 'unexpected UnicodeDecodeError', exit 70
    r = run_cli("kt-cache", "import", str(binary), "--run-dir", str(tmp_path / "x"))
    assert r.returncode == 2, r.stderr
    assert "g.json is not a Kernel Tuner cache (not UTF-8 text: byte 0x80 at offset 0)" in r.stderr
    assert "hint: pass the .json (or .json.gz) cache file" in r.stderr and not (tmp_path / "x").exists()
    r = run_cli("kt-cache", "import", str(binary), "--run-dir", str(tmp_path / "x"), "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "file"
    cache = write(tmp_path, "c.json", json.dumps({"tune_params_keys": ["a"], "cache": {"1": {"a": 1, "time": 1.0}}}))
    for run_dir, needle in [(VA_CL, f"the run directory {VA_CL} is a file"),      # was FileExistsError, exit 70
                            (VA_CL + "/sub", "cannot create the run directory")]:
        r = run_cli("kt-cache", "import", str(cache), "--run-dir", run_dir)
        assert r.returncode == 2, r.stderr
        assert needle in r.stderr and "hint:" in r.stderr and "Traceback" not in r.stderr
    # the same for a tune (the run directory is made the same way)
    taken = write(tmp_path, "taken", "")
    r = run_cli("tune", VA_TEMPLATE, "--spec", VA_SPEC, "--device", "cpu", "--budget", "1", "--run-dir", str(taken))
    assert r.returncode == 2 and f"the run directory {taken} is a file" in r.stderr, r.stderr


def test_kt_cache_export_refuses_an_existing_file_without_force(tmp_path):
    """`kt-cache export -o FILE` replaced an existing FILE without a word (exit 0), where init and extract
    refuse one without --force."""
    cache = write(tmp_path, "c.json", json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1, 2]},
                                                  "cache": {"1": {"a": 1, "time": 1.0}, "2": {"a": 2, "time": 2.0}}}))
    assert run_cli("kt-cache", "import", str(cache), "--run-dir", str(tmp_path / "run")).returncode == 0
    mine = write(tmp_path, "mine.json", "my own notes")
    r = run_cli("kt-cache", "export", str(tmp_path / "run"), "-o", str(mine))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"error: {mine} already exists\nhint: pass --force to overwrite it" in r.stderr
    assert mine.read_text() == "my own notes"
    r = run_cli("kt-cache", "export", str(tmp_path / "run"), "-o", str(mine), "--force", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["entries"] == 2 and len(json.loads(mine.read_text())["cache"]) == 2


def test_a_reader_that_goes_away_is_not_a_wrong_kernel():
    """`kerntune check k.cl | head -1`: rich exited 1 on the broken pipe, which kerntune's exit codes
    read as 'the kernel is wrong'; it is 141, as for a program SIGPIPE stops."""
    import subprocess

    from tests.conftest import KERNTUNE

    p = subprocess.Popen([*KERNTUNE, "strategies"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                    # the reader is gone before the first line
    _, stderr = p.communicate(timeout=120)
    assert p.returncode == 141, (p.returncode, stderr)
    assert b"Traceback" not in stderr


def test_an_original_that_leaves_output_unwritten_gets_a_hint_about_the_specs_shape(tmp_path):
    """A spec whose output is larger than what the kernel writes (init read a transpose's loop striding
    by the block size as padding: a user tour) made bench call the correct original wrong, with no hint."""
    import shutil

    for name in ("vector_add.cl", "reference.py"):
        shutil.copy(REPO / "kernels/examples" / name, tmp_path / name)
    spec = (REPO / "kernels/examples/vector_add.yaml").read_text()
    assert "{name: c, dtype: fp32, shape: [n], intent: out}" in spec
    (tmp_path / "vector_add.yaml").write_text(spec.replace("{name: c, dtype: fp32, shape: [n], intent: out}",
                                                           '{name: c, dtype: fp32, shape: ["n + 16"], intent: out}')
                                              .replace("reference:", "# reference:"))
    r = run_cli("bench", str(tmp_path / "vector_add.cl"), "--device", "cpu", "--shape-set", "cpu", "--repeats", "3",
                "--no-memcheck")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "c: unwritten" in r.stderr and "hint: if the kernel never writes those elements, the spec's shape of c is " \
                                           "larger than what it writes" in r.stderr, r.stderr


def test_bench_says_why_a_shape_in_the_caches_beats_the_copy(capsys):
    # an honest float4 copy of 256 KiB ran at 205% of the copy, which bench printed without a word: the copy
    # is timed on a buffer larger than the caches, which a small shape's bytes fit in
    from kerntune.cli.cmd_bench import _render
    from kerntune.engine.bench import BenchReport, BenchRow
    from kerntune.results import CopyBandwidth, DeviceInfo, EvalResult, ShapeTiming, Status, TimingStats

    def timing(label, moved, pct):
        return ShapeTiming(shape={"n": 1}, label=label, stats=TimingStats.from_samples([1.0, 1.0, 1.0], warmup=0),
                           bytes_moved=moved, achieved_gbs=1.0, pct_of_copy=pct)

    device = DeviceInfo(id="opencl:0:0", backend="opencl", lang="opencl", name="cpu", kind="cpu", l2_bytes=1 << 20)
    copy = CopyBandwidth(bytes_per_copy=64 << 20, stats=TimingStats.from_samples([1.0, 1.0, 1.0], warmup=0))
    rows = [BenchRow(label="small", shape={"n": 1}, kernel=timing("small", 1 << 19, 205.0)),
            BenchRow(label="huge", shape={"n": 2}, kernel=timing("huge", 1 << 30, 104.0)),
            BenchRow(label="mid", shape={"n": 3}, kernel=timing("mid", 1 << 19, 80.0))]
    report = BenchReport(device=device, seed=1, kernel=EvalResult(status=Status.OK, kernel="copy4"),
                         copy_bandwidth=copy, rows=rows)
    _render(report)
    text = " ".join(capsys.readouterr().out.split())
    assert "% copy above 100 on small: each moves less than 128.0 MiB (read+write)" in text, text
    assert "the copy was timed moving 128.0 MiB through memory" in text


def test_bench_without_the_memory_checker_does_not_say_it_checks():
    # the progress line said "checking vector_add.cl with the memory checker" under --no-memcheck
    r = run_cli("bench", str(EXAMPLES / "vector_add.cl"), "--no-memcheck", "--repeats", "3", "--warmup", "1")
    assert r.returncode == 0, r.stderr
    both = r.stdout + r.stderr
    assert "with the memory checker" not in both
    assert "not checking vector_add.cl for memory errors: the memory checker is off (--no-memcheck)" in both, both


def test_the_final_tests_progress_says_which_shapes_off_the_run_it_checks(tmp_path):
    """The final test verifies on shapes above, between or past, and below the run's (engine.checker:
    reach, odd and spread, low shapes); its progress line said "N beyond or between the run's" for all of
    them, low ones included. It counts each kind now."""
    from tests.conftest import vector_add_folder, vector_add_spec

    # a shape set listing n=1000, below the run's 4K: the final test checks it as "low 1K"
    spec = vector_add_spec({"4K": 4096, "256K": 262144}) + "shape_sets:\n  tiny:\n    - {label: 1K, n: 1000}\n"
    kernel = vector_add_folder(tmp_path, spec)
    r = run_cli("tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec", str(kernel.with_suffix(".yaml")),
                "--device", "cpu", "--budget", "2", "--repeats", "5", "--warmup", "1", "--final-repeats", "6",
                "--no-memcheck", "--seed", "1", "--run-dir", str(tmp_path / "run"))
    said = " ".join(r.stderr.split())
    assert r.returncode == 0, said[-3000:]
    assert "beyond or between" not in said, said
    # seed 1 draws a spread shape between the run's; the odd shape sits just past 256K
    assert "(2 fresh, 2 between or past, 1 below the run's)" in said, said


def test_every_option_is_named_in_full_in_piped_help():
    """Piped (no terminal, no $COLUMNS), help was 80 columns wide and cut option names: `regress --help` showed
    '--allow-device-…', an option no one could type from it. Help takes the width tables take (120). Every
    command's help ends with an example that uses only options it has."""
    import os
    import subprocess

    import typer

    from kerntune.cli.app import app
    from tests.conftest import KERNTUNE

    # an explicit environment: readline, loaded in this process, exports COLUMNS=80 to children behind os.environ
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    root = typer.main.get_command(app)
    todo = [((), root)]
    while todo:
        path, cmd = todo.pop()
        subs = getattr(cmd, "commands", {})
        todo += [((*path, name), sub) for name, sub in subs.items()]
        if subs or not path:
            continue
        r = subprocess.run([*KERNTUNE, *path, "--help"], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, (path, r.stderr)
        opts = {opt for param in cmd.params for opt in param.opts + param.secondary_opts}
        for opt in opts:
            if opt.startswith("--"):
                assert opt in r.stdout, (path, opt, r.stdout)
        # and it ends with a worked example (there was none but `show`'s), whose options all exist
        example = r.stdout.split("Example", 1)[-1]
        assert "Example" in r.stdout and f"kerntune {' '.join(path)} " in example, (path, r.stdout)
        for word in example.split():
            if word.startswith("--"):
                assert word in opts, (path, word)
