"""sleuth's benchmarks: run from a checkout with ``../shared/data`` beside it (see README.md)."""
