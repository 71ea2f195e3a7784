"""The optimize run directory: one schema, one reader and writer.

Every stage of ``kerntune optimize`` meets in the run directory: the loop
writes it as it goes, ``--resume`` continues from it, and ``kerntune
report``, ``export`` and ``score`` read it. The typed records are in
:mod:`kerntune.record.models` (run.json, proposal.json, settings) and
:mod:`kerntune.record.outcome` (test.json, results.json, dispatch.json);
:class:`kerntune.record.store.RunDir` is the only code that reads or writes
their files. The layout (also in the README, section "Optimize")::

    run.json              the manifest: format, inputs, settings, device, every round, status, LLM usage
    original/             the run's own copy of the kernel, its spec and the spec's helper files
    baseline.json         the original kernel's verification and timing
    rounds/NN/            input kernel, template, proposal.json, tuning.db, summary.json, best kernel
    llm/NNNN.json         LLM requests and responses (no API key), token counts
    test.json             the tester's final verification and re-timing
    best.<ext>            the general configuration, parameters baked in
    per_shape/            one kernel per shape, and dispatch.json (shape -> kernel, launch, speedup)
    spec.yaml             the original spec with a launch for every kernel the run wrote
    results.json          the run's answer (what `kerntune optimize --json` prints)
    report.md             written by kerntune.reporting (as `kerntune report` writes it)

The format is versioned (``run.json``'s ``format``); a run written in another
format is refused with a message that says so, never half-read.
"""
