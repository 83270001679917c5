"""A command's verb told to the speech engines as a verb.

A command starts with its verb ("close the blinds", "use the flashlight", "record a video"), and
there espeak-ng, and piper through it, read a word that is both verb and noun or adjective as the
noun: "close" /kloʊs/, "use" /juːs/, "record" and "update" stressed on the first syllable
(`espeak-ng -q -x "close the box"` against "to close the box"). festival reads "close" the same way
at a command's start, and flite and hibari after "please" ("please close terminal"), while people say
the verb. So the voices said one of the commands most grammars hold as no person does. Where such a
word stands where a command's verb stands (first, after "please", "and", "then" and the like, or after
a pause's comma) each engine is told the verb: espeak-ng and piper its phonemes, as espeak-ng itself
reads the word after "to" (`[[...]]`, which both take as phonemes), the engines that read text "cloze"
for "close" (they read the others' verbs as verbs). The transcript never changes, only what the engine
is told (as engines.letter_names).
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Callable

# verbs of commands whose initial reading by espeak-ng is another word: a segment ("close", "use",
# "separate", "estimate") or the stress (the rest); words whose noun starts commands too
# ("transport", "content", "object") are left as espeak-ng reads them
IMPERATIVES = frozenset({
    "close", "use", "record", "present", "project", "increase", "update", "upgrade", "insert", "export", "extract",
    "transfer", "permit", "separate", "estimate", "recall", "escort", "construct",
})  # fmt: skip
_BEFORE_VERB = frozenset({"please", "and", "then", "or", "now", "just", "also"})
SPELLED = {"close": "cloze"}  # read as the verb by festival, flite, hibari and espeak-ng alike
WORD = re.compile(r"[A-Za-z']+")  # a word of a text told to the engines (engines.letter_names uses it too)


def spliced(text: str, told: list[tuple[re.Match[str], str]]) -> str:
    """`text` with each matched word (in order) replaced by what the engine is told for it."""
    out, end = [], 0
    for word, said in told:
        out += [text[end : word.start()], said]
        end = word.end()
    return "".join(out) + text[end:]


def verb_spans(text: str) -> list[re.Match[str]]:
    """The words of `text` in IMPERATIVES that stand where a command's verb stands."""
    spans = []
    words = list(WORD.finditer(text))
    for i, word in enumerate(words):
        if word.group().lower() not in IMPERATIVES:
            continue
        before = words[i - 1] if i else None
        if before is None or before.group().lower() in _BEFORE_VERB or "," in text[before.end() : word.start()]:
            spans.append(word)
    return spans


def told_as_verbs(text: str, form: Callable[[str], str | None]) -> str:
    """`text` with each verb of `verb_spans` replaced by `form(word)` (None: left as written)."""
    told = [(word, form(word.group().lower())) for word in verb_spans(text)]
    return spliced(text, [(word, said) for word, said in told if said is not None])


def spelled_verb(word: str) -> str | None:
    """The verb's spelling for an engine that reads text ("cloze"); None for the verbs they read right."""
    return SPELLED.get(word)


@functools.cache
def espeak_verb(word: str, language: str, data_dir: str | None = None, ipa: bool = False) -> str:
    """`word` as espeak-ng reads it after "to", as phonemes in `[[...]]`: its own mnemonics for espeak-ng,
    IPA for piper (`ipa`, read with piper's espeak-ng data, `data_dir`, so that every phoneme is one its
    voice knows). Cached: one espeak-ng run per word and accent for a worker's life. Where espeak-ng cannot
    tell (piper installed without Debian's espeak-ng, data it cannot read) the word as written: the engine
    then reads it as it always did, rather than failing every command that holds it."""
    cmd = ["espeak-ng", "-q", "--ipa" if ipa else "-x", "-v", language]
    if data_dir is not None:
        cmd.append(f"--path={data_dir}")
    try:
        said = subprocess.run([*cmd, f"to {word}"], check=True, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return word
    phonemes = said.split()[1:]
    return f"[[{' '.join(phonemes)}]]" if phonemes else word
