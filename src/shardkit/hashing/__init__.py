"""Hash-function implementations used to locate objects in shard indexes."""
