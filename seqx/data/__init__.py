"""The data stage: manifests of utterances, from a synthetic command corpus or existing data."""
