"""What a lab is, as values: its topology, its kernel plan, where its processes run."""
