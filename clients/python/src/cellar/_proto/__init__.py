"""Stubs generated from proto/cellar/v1/cellar.proto by clients/python/generate.sh; do not edit."""
