"""A run: the runner, interleaved sessions, per-trial evidence, platform controls, output directory."""
