"""Plumbing the lock modules use and a student can skip: clients, scripts, queues."""
