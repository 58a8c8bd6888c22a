"""The network layers: one module per layer, each its options and its kernel plan; the registry."""
