"""Key-value secrets engines: version 1 (flat) and version 2 (versioned)."""
