"""Processes on this machine: shop instances, Redis and ZooKeeper servers,
scratch databases, a lock held by a process of its own (``holder``, the labs' and the
grader's), and a client for the instances' admin API."""
