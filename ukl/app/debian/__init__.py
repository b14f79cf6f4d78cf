"""Debian source packages built as UKL applications or ordinary processes."""
