"""Session log files: our JSONL, the original harness's later logs, Zstandard frames.

Byte formats only: reading a file into a header and events, writing them back. The
use cases that store or fetch sessions belong to the application layer.
"""
