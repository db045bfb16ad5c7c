"""Scheduled jobs: the work they do, the scheduler that fires them on every
instance, and the guards that make each fire time run once in the cluster."""
