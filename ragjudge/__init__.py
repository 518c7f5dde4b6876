"""ragjudge: end-to-end evaluation of retrieval-augmented generation with LLM judges."""

__version__ = "0.1.0"
