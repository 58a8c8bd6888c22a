"""workloads package of vnetbench."""
