"""Compiler messages as the user reads them: the compiler's log without the binding's wrapping, its
locations naming the user's file, and the exit class of a kernel that fails."""

import pytest

from kerntune.backends.compile_log import name_locations, opencl_build_log
from kerntune.errors import EXIT_STATUS
from kerntune.results import Status

# PyOpenCL 2025's text for a failed build on Intel's CPU runtime, as it came (the device address and
# the temporary file are the only things that change from run to run)
PYOPENCL = """clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE - \
clBuildProgram failed: BUILD_PROGRAM_FAILURE

Build on <pyopencl.Device 'AMD EPYC' on 'Intel(R) OpenCL' at 0x5644cd48f0b8>:

Compilation started
1:4:9: error: cannot combine with previous 'int' declaration specifier
    4 |     int half = 3;
      |         ^
Compilation failed

(options: -I /venv/lib/python3.11/site-packages/pyopencl/cl)
(source saved as /tmp/tmpckyz9hq3.cl)"""

NVCC = """kernel.cu(4): error: expected an expression
      int x = ;
              ^

1 error detected in the compilation of "kernel.cu"."""


def test_the_build_log_is_the_compilers_alone():
    log = opencl_build_log(PYOPENCL)
    assert "BUILD_PROGRAM_FAILURE" not in log and "Build on" not in log and "options:" not in log
    assert "Compilation" not in log
    assert log.splitlines()[0] == "1:4:9: error: cannot combine with previous 'int' declaration specifier"
    # where the binding saved the source stays: for a generated instance it is the only copy named
    assert log.splitlines()[-1] == "(source saved as /tmp/tmpckyz9hq3.cl)"


def test_text_that_is_not_a_binding_error_is_kept():
    assert opencl_build_log("  <source>:3:1: error: x\n") == "<source>:3:1: error: x"


@pytest.mark.parametrize("log,file,want", [
    (opencl_build_log(PYOPENCL), "k/rope.cl", "k/rope.cl:4:9: error: cannot combine"),
    ("<source>:12:3: warning: unused", "a.cl", "a.cl:12:3: warning: unused"),
    ("129:19:22: error: initializing", "k.cl", "k.cl:19:22: error: initializing"),   # a worker's 129th program
    ("error: /home/u/.cache/pocl/kcache/tempfile_Ab12Cd.cl:4:9: cannot combine with previous 'int'", "k.cl",
     "k.cl:4:9: error: cannot combine"),
    (NVCC, "k/rope.cu", "k/rope.cu(4): error: expected an expression"),
    ("default_program(7): error: identifier \"y\" is undefined", "x.cu", "x.cu(7): error: identifier"),
])
def test_locations_name_the_users_file(log, file, want):
    named = name_locations(log, file)
    assert named.splitlines()[0].startswith(want)
    assert "/tmp/tmp" not in named       # the file named in every location says where the source is


def test_locations_stay_when_the_source_is_not_a_users_file():
    # a template instance or an extracted kernel: its line numbers are not the file's
    assert name_locations(NVCC, None) == NVCC
    # and only the compiler's names for its input change, never another file's (an included header)
    assert name_locations("inc/helpers.h(3): error: x\n", "k.cu") == "inc/helpers.h(3): error: x"
    assert 'compilation of "k.cu"' in name_locations(NVCC, "k.cu")


@pytest.mark.parametrize("status,exit_status", [
    (Status.WRONG_RESULT, 1), (Status.MEMORY_ERROR, 1), (Status.COMPILE_ERROR, 4), (Status.RESOURCE_LIMIT, 4),
    (Status.CRASH, 4), (Status.TIMEOUT, 4), (Status.LAUNCH_FAILURE, 4),
])
def test_a_failed_kernels_exit_status(status, exit_status):
    assert EXIT_STATUS[status.error_code] == exit_status
