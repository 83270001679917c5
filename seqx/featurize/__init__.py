"""Audio in, feature frames out: the encoder's embeddings, their statistics and their store."""
