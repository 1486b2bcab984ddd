"""Parsers generated from schemas/*.ksy by tools/ksc.js. Do not edit: run `make generate`."""
