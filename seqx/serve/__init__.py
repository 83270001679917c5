"""`seqx serve`: a trained model as a Wyoming speech-to-text service (Home Assistant, Rhasspy 3)."""
