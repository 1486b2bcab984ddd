"""Neuroglancer precomputed tools: choosing sharding parameters, converting layers between the
unsharded and the sharded layout, and decoding the payloads stored in them."""
