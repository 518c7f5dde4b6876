"""A stable content hash of a test set, for run manifests.

sha256 over the canonical JSON (sorted keys, no whitespace) of every document sorted by id,
then every case sorted by id, each record followed by a newline, with a marker line between the
two parts. The set's name is not hashed: renaming a folder does not change its content.
"""

from __future__ import annotations

import hashlib
import json

from ragjudge.schema import TestSet


def dataset_hash(testset: TestSet) -> str:
    """Hex sha256 of the documents and cases, independent of their order in the files."""
    h = hashlib.sha256()
    for part, records in (("documents", testset.documents), ("cases", testset.cases)):
        h.update(f"#{part}\n".encode())
        for record in sorted(records, key=lambda r: r.id):
            text = json.dumps(
                record.model_dump(mode="json"),
                sort_keys=True,
                ensure_ascii=False,
                separators=(",", ":"),
            )
            h.update(text.encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()
