"""Scenarios: the model, loading YAML within bounds, the schema, help and overrides."""
