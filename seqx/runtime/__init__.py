"""The exported (ONNX) model run with onnxruntime + numpy: no torch, no pydantic, a fast start.

    from seqx.runtime import load_exported, transcribe_files
    model = load_exported("exp/commands/onnx")
    print(transcribe_files(model, ["command.wav"])[0].text)

Everything here mirrors the torch path (seqx.featurize, seqx.decode) and is held equal to it
by tests/test_runtime.py; what decides a result (gates, rejection, intent/slot parse) is the
torch path's own torch-free code (seqx/decode/result.py, seqx/grammar/). Importing this
package never imports torch (tested too).
"""

from seqx.decode.result import Result
from seqx.runtime.model import ExportedModel, is_exported, load_exported
from seqx.runtime.transcribe import settings_for, transcribe_files, transcribe_waves

__all__ = [
    "ExportedModel", "Result", "is_exported", "load_exported", "settings_for", "transcribe_files", "transcribe_waves",
]
