"""Detess: MLA-tiled to linear or strided layout conversion (numpy reference and C)."""
