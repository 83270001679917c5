"""The model bundle: save_bundle then load_bundle rebuilds the same model, features, CMVN and tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from seqx.decode.bundle import load_bundle, save_bundle
from seqx.decode.search import greedy_search
from seqx.featurize.cmvn import Cmvn
from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer
from seqx.recipe import DecodeSettings, FeatureSettings, ModelSettings, TokenizerSettings
from seqx.tokenize.tokenizer import train_tokenizer


def test_round_trip_gives_identical_outputs(tmp_path: Path) -> None:
    tokenizer = train_tokenizer(["find my files", "check the battery", "lock the screen"], tmp_path / "tok",
                                TokenizerSettings(kind="char", vocab_size=30))
    features = FeatureSettings(kind="mfcc", n_mfcc=13, n_mels=40)
    settings = ModelSettings(d_model=32, heads=2, enc_layers=2, dec_layers=1, d_ff=64, dropout=0.1, ctc_weight=0.3)
    dims = ModelDimensions.from_settings(settings, features.n_feats, tokenizer)
    torch.manual_seed(0)
    model = Seq2SeqTransformer(dims).eval()
    cmvn = Cmvn(torch.randn(13), torch.rand(13) + 0.5)
    decode = DecodeSettings(beam=3, max_len=12)
    save_bundle(tmp_path / "model", model, features, 16000, cmvn, tokenizer, decode)

    bundle = load_bundle(tmp_path / "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir() if not p.name.startswith(".")) == [
        "config.json", "model.safetensors", "tokenizer.model"]
    assert bundle.dims == dims and bundle.features == features and bundle.decode == decode
    assert bundle.sample_rate == 16000 and not bundle.model.training
    assert torch.equal(bundle.cmvn.mean, cmvn.mean) and torch.equal(bundle.cmvn.std, cmvn.std)
    assert bundle.tokenizer.encode("check my files") == tokenizer.encode("check my files")
    assert bundle.extractor.n_feats == 13
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert {"dims", "features", "sample_rate", "cmvn", "tokenizer", "decode"} <= set(config)

    feats, lens = torch.randn(2, 60, 13), torch.tensor([60, 41])
    tokens, token_lens = torch.tensor([[dims.bos_id, 5, 6, 7], [dims.bos_id, 8, 0, 0]]), torch.tensor([4, 2])
    with torch.no_grad():
        want = model(feats, lens, tokens, token_lens)
        got = bundle.model(feats, lens, tokens, token_lens)
        assert torch.equal(want.logits, got.logits) and torch.equal(want.ctc_logprobs, got.ctc_logprobs)
        memory, mem_lens = model.encode(feats, lens)
        memory2, mem_lens2 = bundle.model.encode(feats, lens)
    assert [h.tokens for h in greedy_search(model, memory, mem_lens, 10)] == [
        h.tokens for h in greedy_search(bundle.model, memory2, mem_lens2, 10)]
    # no tied-weight copies were lost: the output layer is still the embedding
    if dims.tie_embeddings:
        assert torch.equal(bundle.model.decoder.output.weight, bundle.model.decoder.embed.weight)
