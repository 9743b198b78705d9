"""Tests on a local Ray instance: a package, so that its instance ends with its last test."""
