"""The build host: which Debian packages UKL needs, and installing them."""
