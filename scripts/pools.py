"""Worker pools for the replay scripts: a fresh interpreter per worker (``forkserver`` where the
platform has it, else ``spawn``), not a fork of the caller. The scripts are also driven from the test
suite, whose process runs threads: forking it may deadlock a child (Python 3.12 warns, and 3.14 no longer
forks by default). A worker imports the script's module again; every job carries what it needs."""

from __future__ import annotations

import multiprocessing


def pool(procs: int):
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn").Pool(procs)
