"""``python -m vnetbench``: the same as the ``vnetbench`` command."""

from vnetbench.cli.main import entry_point

entry_point()
