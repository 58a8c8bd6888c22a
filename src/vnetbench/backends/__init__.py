"""backends package of vnetbench."""
