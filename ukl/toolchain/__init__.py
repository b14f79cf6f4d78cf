"""Compiling applications for images."""
