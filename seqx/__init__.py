"""seqx: featurize speech, train a BPE tokenizer and a Transformer encoder-decoder, decode commands."""

__version__ = "0.1.0"
