"""This host's kernel and programs: namespaces, netlink, cgroups, processes, features, the run's state."""
