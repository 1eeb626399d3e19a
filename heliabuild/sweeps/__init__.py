"""Sweeps, without SCons: a grid's points and folder names (grid), the comparison table (table) and its
HTML report (report). heliabuild.scons.sweep and heliabuild.scons.sweep_table wire them into SCons;
docs/sweeps.md is the user documentation."""
