"""What an export's config.json carries for the runtime to decide as the bundle does.

The bundle's config already holds the decode settings (gates, rejection thresholds, free
beam) and the training grammar as data; the runtime cannot compile a grammar to tokens
(that needs the tokenizer wrapper and torch), so the export adds:

- `grammar`: the grammar decoding is held to, as data (what the runtime parses an answer
  into intent and slots with: seqx.grammar's own parser). A `decode.grammar` file (or
  `seqx export --grammar FILE`) is read now and stored, and `decode.grammar` becomes
  `recipe`: the folder needs nothing outside it;
- `automaton`: that grammar over the tokenizer's pieces (TokenAutomaton.to_dict()), the
  search's mask;
- `vad`: which Silero VAD the no-speech gate (decode.vad_threshold) was used with.
"""

from __future__ import annotations

from typing import Any

from seqx.decode.bundle import Bundle
from seqx.errors import SeqxError
from seqx.grammar.errors import GrammarError


def decoding_config(bundle: Bundle, config: dict[str, Any]) -> dict[str, Any]:
    """`config` (the bundle's config.json) with the grammar, its automaton and the VAD record."""
    config = dict(config)
    choice = bundle.decode.grammar  # `seqx export --grammar` may have changed it from the bundle's config
    grammar = bundle.grammar if choice in ("recipe", "none") else bundle.decode_grammar(choice)
    config["decode"] = {**config["decode"], "grammar": "none" if choice == "none" else "recipe"}
    config["grammar"] = grammar.to_dict() if grammar is not None else None
    config["automaton"] = None
    if grammar is not None:
        try:
            config["automaton"] = bundle.automaton(grammar).to_dict()
        except GrammarError as err:
            if choice != "none":
                raise SeqxError(f"export: the model's grammar: {err}") from None
            config["grammar"] = None  # free decoding only: a grammar it cannot spell is left out
    config["vad"] = _vad_record(float(config["decode"].get("vad_threshold", 0.0)))
    if choice not in ("recipe", "none"):  # the heads' classes are the training grammar's: no vote on another's
        config["slot_heads"] = None
    return config


def _vad_record(threshold: float) -> dict[str, Any] | None:
    """The gate's model (openwakeword's silero_vad.onnx) and version; None when the gate is off."""
    if threshold <= 0:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("openwakeword")
    except PackageNotFoundError:
        installed = None
    return {"model": "silero_vad.onnx", "package": "openwakeword", "version": installed, "threshold": threshold}
