"""Where a result came from: host facts, versions, binaries, git state."""
