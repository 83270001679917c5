"""The Transformer encoder-decoder and its loss: the network only (decoding is seqx/decode/)."""

from seqx.model.loss import joint_loss
from seqx.model.transformer import DecodeCache, ModelDimensions, ModelOutput, Seq2SeqTransformer, param_groups

__all__ = [
    "DecodeCache",
    "ModelDimensions",
    "ModelOutput",
    "Seq2SeqTransformer",
    "joint_loss",
    "param_groups",
]
