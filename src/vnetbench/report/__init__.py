"""report package of vnetbench."""
