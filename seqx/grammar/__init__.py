"""Command grammars: intents, templates and slots; JSGF and phrase-list import; counting and
sampling without enumeration; hash hold-out; the word- and token-level automata.

The pieces, one module each: `syntax` (the template language), `model` (Grammar, Parse),
`fsa` (determinize, minimize, count), `tokens` (the automaton over tokenizer pieces),
`heldout`, `jsgf`, `phrases`, `load` (recipe and files), `summary`.
"""

from seqx.grammar.errors import GrammarError
from seqx.grammar.heldout import is_heldout
from seqx.grammar.load import grammar_from_dict, grammar_from_file, load_grammar
from seqx.grammar.model import Grammar, Parse

__all__ = ["Grammar", "GrammarError", "Parse", "grammar_from_dict", "grammar_from_file", "is_heldout", "load_grammar"]
