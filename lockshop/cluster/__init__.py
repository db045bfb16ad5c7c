"""Processes on this machine: shop instances, Redis and ZooKeeper servers,
scratch databases, and a client for the instances' admin API."""
