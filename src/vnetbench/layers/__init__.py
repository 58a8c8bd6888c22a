"""layers package of vnetbench."""
