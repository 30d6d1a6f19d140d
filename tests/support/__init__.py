"""Helpers shared by the tests: broker and ZooKeeper processes, the wire client, clusters,
certificates, fake peers and record builders.  No tests here; fixtures defined here are
registered by the conftest.py files (or imported by the test modules) that use them."""
