"""Loaders and writers for documents, test cases, BEIR folders, TREC files, SQuAD and HF datasets.

Every malformed input raises ``ragjudge.errors.DataError`` naming its file and line; problems
evaluation can survive (skipped rows, unknown ids) give one counted ``DataWarning`` each.
See docs/data.md for the formats.
"""

from .beir import load_beir, load_testset
from .chunking import chunk_documents, parent_map
from .diagnostics import DataWarning
from .documents import load_cases, load_documents
from .hashing import dataset_hash
from .hf import load_hf, to_hf_dataset
from .squad import load_squad
from .trec import read_trec_qrels, read_trec_run, trec_order, write_trec_qrels, write_trec_run

__all__ = [
    "DataWarning",
    "chunk_documents",
    "dataset_hash",
    "load_beir",
    "load_cases",
    "load_documents",
    "load_hf",
    "load_squad",
    "load_testset",
    "parent_map",
    "read_trec_qrels",
    "read_trec_run",
    "to_hf_dataset",
    "trec_order",
    "write_trec_qrels",
    "write_trec_run",
]
