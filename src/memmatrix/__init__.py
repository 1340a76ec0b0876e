"""memmatrix: reproduce how agent-memory systems behave on the write path, as re-verifiable artifacts."""

__version__ = "0.1.0"
