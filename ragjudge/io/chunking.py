"""Chunking long documents with langchain's ``RecursiveCharacterTextSplitter``.

Chunk ``i`` of document ``d`` gets id ``f"{d.id}#{i}"`` and ``parent_id = d.doc_id``, so that a
chunk ranking can be mapped back to documents (``parent_map`` and
``ragjudge.metrics.to_document_level``) and judged against document-level qrels. Each chunk
keeps the title and metadata and adds ``chunk_index`` and ``start_index`` (its character offset
in the document text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragjudge.errors import ConfigError
from ragjudge.schema import Document

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 100


def chunk_documents(
    docs: Iterable[Document],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    separators: Sequence[str] | None = None,
) -> list[Document]:
    """Split every document into chunks of at most ``chunk_size`` characters."""
    if chunk_size < 1 or not 0 <= chunk_overlap < chunk_size:
        raise ConfigError(
            "need chunk_size >= 1 and 0 <= chunk_overlap < chunk_size, "
            f"got {chunk_size}, {chunk_overlap}"
        )
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        separators=list(separators) if separators is not None else None,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        add_start_index=True,
    )
    chunks: list[Document] = []
    for doc in docs:
        for i, piece in enumerate(splitter.create_documents([doc.text])):
            chunks.append(
                Document(
                    id=f"{doc.id}#{i}",
                    text=piece.page_content,
                    title=doc.title,
                    parent_id=doc.doc_id,
                    metadata={
                        **doc.metadata,
                        "chunk_index": i,
                        "start_index": piece.metadata["start_index"],
                    },
                )
            )
    return chunks


def parent_map(chunks: Iterable[Document]) -> dict[str, str]:
    """Chunk id -> document id."""
    return {c.id: c.doc_id for c in chunks}
