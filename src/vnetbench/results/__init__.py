"""Results as values: samples, their store, statistics, pairing, comparison; importable from anywhere."""
