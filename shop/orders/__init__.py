"""Taking orders: the order path (read, check, delay, write), the strategies
that guard or replace it, and the stocktake that reads under them."""
