"""studies package of vnetbench."""
