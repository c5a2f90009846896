"""Gate 5 live: the recording proxy, the mirroring shadow proxy, its pair store and the verdict
endpoint controllers read (docs/shadow-live.md)."""
