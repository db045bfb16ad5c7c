"""The tooling around the shop: the ``lockshop`` command, the processes it
starts, the workshop (demo, labs, report) and the benchmarks.

It imports the served app (``shop``) and the locks; neither imports it.
"""
