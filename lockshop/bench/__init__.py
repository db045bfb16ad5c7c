"""Benchmarks that print and write their figures: the database strategies
through the whole shop, and the Redis and ZooKeeper locks on their own."""
