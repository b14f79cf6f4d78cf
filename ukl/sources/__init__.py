"""Debian source packages and our patch series on top of them."""
