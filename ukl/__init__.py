"""UKL: Unikernel Linux tooling (sources, kernel, image, runner)."""
