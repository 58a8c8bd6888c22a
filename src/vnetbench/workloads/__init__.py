"""What runs across a lab: the Workload contract, its options base and the registry, each workload."""
