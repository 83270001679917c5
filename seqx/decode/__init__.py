"""Everything that turns a trained model into text: the bundle, greedy and beam search over
scorers, CTC prefix scoring, the CTC-gap guard, transcribe and evaluate (see docs/model.md)."""
