"""Shared helpers for heliabuild's tests: hand-built TFLite models and small utilities."""
