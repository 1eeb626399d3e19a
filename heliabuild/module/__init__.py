"""The AOT module as a deliverable: a model and its AOT plan exported as a self-contained folder, in the
layout a firmware project uses (plain, CMake, Zephyr, CMSIS pack). See docs/module.md and
heliabuild.module.export."""
