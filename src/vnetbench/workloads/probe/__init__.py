"""The probe's workloads (rr, crr, stream, gaps, barrier, media: ``vnetbench-probe``):
``workload`` (their options and how each runs across a lab), ``parse`` (its JSON lines into
samples and histograms)."""
