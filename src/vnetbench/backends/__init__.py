"""Realising a lab: the backend interface and registry, open_lab and the live Lab, the layer
catalog, one package per backend."""
