"""Pieces shared by every layer: errors, paths, logged subprocesses."""
