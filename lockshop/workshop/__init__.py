"""What a workshop runs: load runs per strategy, the demo, the labs and the report."""
