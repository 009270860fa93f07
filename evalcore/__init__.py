"""evalcore: an evaluation workbench for retrieval-augmented generation systems."""

__version__ = "0.1.0"
