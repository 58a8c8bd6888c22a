"""``python -m vnetbench``: the same as the ``vnetbench`` command."""

from vnetbench.cli import entry_point

entry_point()
