"""The functions behind the package root (``ragjudge.evaluate``, ``ragjudge.sweep``,
``ragjudge.compare``, ``ragjudge.agree``), one module each; docs/api.md documents them."""
