"""ModelDimensions is built from ModelSettings in one place; the two sets of defaults agree."""

from __future__ import annotations

from dataclasses import fields

from seqx.model import ModelDimensions
from seqx.recipe import ModelSettings


class _Ids:
    vocab_size, pad_id, bos_id, eos_id, blank_id = 40, 0, 1, 2, 0


def test_default_settings_give_default_dimensions() -> None:
    # a bare ModelDimensions (tests, benches) is the network the default recipe trains
    assert ModelDimensions.from_settings(ModelSettings(), 80, _Ids()) == ModelDimensions(n_feats=80, vocab_size=40)


def test_every_shared_field_is_taken_from_the_settings() -> None:
    shared = {f.name for f in fields(ModelDimensions)} & set(ModelSettings.model_fields)
    assert shared == {"d_model", "heads", "enc_layers", "dec_layers", "d_ff", "dropout", "frontend",
                      "conv_channels", "conv_kernel", "tie_embeddings", "max_positions"}  # fmt: skip
    settings = ModelSettings(d_model=64, heads=2, enc_layers=2, dec_layers=1, d_ff=128, dropout=0.0,
                             frontend="linear", conv_channels=8, conv_kernel=3, tie_embeddings=False, max_positions=512)  # fmt: skip
    dims = ModelDimensions.from_settings(settings, 80, _Ids())
    assert all(getattr(dims, name) == getattr(settings, name) for name in shared)
