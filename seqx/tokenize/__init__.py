"""Text normalization and the sentencepiece tokenizer (BPE, unigram or char)."""
