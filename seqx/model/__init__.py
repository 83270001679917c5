"""The Transformer encoder-decoder, its loss and its search (see docs/model.md)."""

from seqx.model.cache import DecodeCache
from seqx.model.dims import ModelDimensions
from seqx.model.loss import joint_loss
from seqx.model.search import Hypothesis, beam_search, greedy_search
from seqx.model.transformer import ModelOutput, Seq2SeqTransformer, param_groups

__all__ = [
    "DecodeCache",
    "Hypothesis",
    "ModelDimensions",
    "ModelOutput",
    "Seq2SeqTransformer",
    "beam_search",
    "greedy_search",
    "joint_loss",
    "param_groups",
]
