"""`seqx listen`: live commands from a microphone, stdin PCM or a file; VAD endpointing; actions."""
