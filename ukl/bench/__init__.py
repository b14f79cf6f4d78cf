"""`ukl bench`: the LEBench-style microbenchmarks, every kernel config in one run."""
