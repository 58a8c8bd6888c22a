"""Test doubles used only by the unit tests (never a feature)."""
