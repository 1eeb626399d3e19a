"""Kernels the pipeline relies on: numpy references (the executable statement of each
contract) and portable C99 implementations for targets."""
