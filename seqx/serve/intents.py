"""A command's text to its intent and slots, for Wyoming's intent step: Home Assistant's conversation
agent (Settings > Voice assistants > Conversation agent: the seqx service) and Rhasspy 3's `intent`
programs send what was said as text (`transcript` or `recognize`) and read back `intent` or
`not-recognized`.

The text is read with the model's own grammar, spelled as its decoded texts are (the bundle's
tokenizer settings: "Turn on the lamp." and "set it to 50%" as "turn on the lamp", "set it to fifty
percent"), so a transcript seqx sent parses to the command it decoded, and another recognizer's text
(Whisper's, typed text) parses when it says a sentence of the grammar. Nothing is guessed: text outside
the grammar is not recognized, never the nearest command (a false accept is the failure users hate most).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqx.errors import SeqxError
from seqx.grammar.model import Grammar, Parse

CONFIG = "config.json"  # a bundle's and an export's: tokenizer settings and the grammar


@dataclass(frozen=True)
class CommandReader:
    """`grammar` spelled as `normalize` spells a text (Grammar.spoken)."""

    grammar: Grammar
    normalize: Callable[[str], str]

    def __call__(self, text: str) -> Parse | None:
        return self.grammar.parse(self.normalize(text))


def command_reader(model_dir: Path, grammar: str | None = None) -> CommandReader | None:
    """The reader of a bundle's or an export's commands: its own grammar, or the file `grammar` names
    (`recipe`, `none` and None: the model's own); None when there is no grammar to read them by."""
    from seqx.recipe import TokenizerSettings
    from seqx.tokenize.text import normalize_text

    path = model_dir / CONFIG
    try:
        config = json.loads(path.read_text())
        settings = TokenizerSettings.model_validate(config["tokenizer"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SeqxError(f"{path}: no tokenizer settings to read commands by ({type(err).__name__}: {err})") from None

    def normalize(text: str) -> str:
        return normalize_text(text, settings)

    if grammar not in (None, "recipe", "none"):
        from seqx.grammar import grammar_from_file

        return CommandReader(grammar_from_file(grammar).spoken(normalize), normalize)
    if not config.get("grammar"):
        return None
    return CommandReader(Grammar.from_dict(config["grammar"]).spoken(normalize), normalize)


def intent_reply(parse: Parse | None, heard: str, context: Any = None) -> tuple[str, dict[str, Any]]:
    """The Wyoming event that answers a text: `intent` with the slots as entities (Home Assistant hands
    them to its intent handlers as `{name: {value: ...}}`), or `not-recognized` with what Home Assistant
    says then. The text as read (`heard`) rides along, as seqx's transcripts carry theirs."""
    data: dict[str, Any] = {"context": context} if context is not None else {}
    if parse is None:
        return "not-recognized", {"text": "Sorry, I couldn't understand that", "heard": heard, **data}
    entities = [{"name": name, "value": list(v) if isinstance(v, tuple) else v} for name, v in parse.slots.items()]
    return "intent", {"name": parse.intent, "entities": entities, "heard": heard, **data}
