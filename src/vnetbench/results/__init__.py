"""results package of vnetbench."""
