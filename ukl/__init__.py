"""UKL: Unikernel Linux tooling (see docs/architecture.md for its layers)."""
