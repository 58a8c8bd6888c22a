"""vnetbench: measure what a virtual network layer costs a distributed system.

Public API is small: `vnetbench.scenario` (load scenarios), `vnetbench.lab` (build a
virtual cluster and run things inside its nodes), `vnetbench.runner` (run a scenario).
"""

__version__ = "0.1.0"
