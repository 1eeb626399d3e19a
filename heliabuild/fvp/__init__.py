"""Arm Corstone FVPs: the `fvp` backend (docs/runner.md, "Running on an FVP"; ../shared/targets/fvp.md).

One concept per module:

- targets: the FVP executables, the NPU and MAC counts each runs, resolving and refusing a Vela output;
- command: the documented command line of one job, and the record of it without machine paths;
- locate: finding an FVP on PATH or in `$HELIA_FVP_DIR`, and its version;
- firmware: Arm's prebuilt runner from the `mlia-ethos-u` package (path, SHA-256, package version);
- aot_firmware: the facts of heliabuild's own AOT firmware for the FVP (its targets, files, PMU events, figures);
- launch: bounded, timed-out FVP subprocesses, run in parallel;
- log: the strict UART log reader, reading each firmware by its own ending (the log is the authority; a
  non-zero FVP exit status after a complete log fails the run too);
- counters: merging the per-segment jobs of a sample into its figures;
- heliabuild.runner.backends.fvp_prebuilt and fvp_aot (above this package): the runner build's and the run
  stage's parts.
"""
