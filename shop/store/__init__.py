"""What the shop keeps in its database: the engine, the tables, the cluster's
settings, the products for sale, and the audit that reads them back."""
