"""Decoding a trained bundle: files to text (`transcribe`) and scored runs over a split (`evaluate`)."""
