"""Kernel flavours: the UKL options table, config fragments, and incremental Kbuild builds."""
