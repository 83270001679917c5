"""JSGF in and out: PocketSphinx users' grammars become seqx grammars, and back.

Import covers what command grammars use: `public` rules (each becomes an intent), `<rule>`
references (`<grammar.rule>` for this file's own too), `[optional]`, `|`, `( )`, `<NULL>` (nothing
said) and `<VOID>` (an alternative that can never be said); weights (`/2/`) and tags (`{...}`) are
read and ignored; `import <g.rule>;` and `import <g.*>;` read g.gram or g.jsgf beside the file.
`*` and `+` repetition is unrolled to at most REPEAT_MAX times: a command grammar must be finite
to be counted and sampled, and a spoken command repeats a part a few times, not forever (each
count is drawn as often as the others, as any alternative is). A recursive rule, the way Sphinx
grammars often say a digit string (`<digits> = <digit> [<digits>];`), is unrolled the same way: a
rule is put inside itself at most REPEAT_MAX times (recursive rules that call each other: REPEAT_MAX
deep in all), and the innermost can only take the ways out.
A private rule that is a plain list of word alternatives becomes a slot (so a parse names it:
cards.gram gives `rank` and `suits`); other rules are put in place where they are used. A
reference to a rule never defined, a recursive rule with no way out (`<a> = go <a>;`) and an
import with no file are errors naming file and line.

Export writes one rule per intent and per slot and a public `<command>` that is any of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar, Slot, SlotValue, Template
from seqx.grammar.syntax import Alt, Expr, Opt, Seq, SlotRef, Word, choice_of, render, sequence_of
from seqx.text_files import read_text_file

REPEAT_MAX = 5  # `x+`: x said 1 to 5 times; `x*`: 0 to 5

_TOKEN = re.compile(r"<[^>]*>|/[^/]*/|\{[^}]*\}|\"[^\"]*\"|[()\[\]|;=*+]|[^\s()\[\]|;=*+<>/{}\"]+")


@dataclass(frozen=True)
class _Ref:
    name: str
    line: int


class _Null:
    """`<NULL>`: matches saying nothing."""


class _Void:
    """`<VOID>`: matches nothing; an alternative holding it can never be said."""


_NULL, _VOID = _Null(), _Void()


@dataclass
class _Rule:
    name: str
    public: bool
    body: object
    line: int
    source: str | None = None  # the file an imported rule was written in (None: the grammar's own)


def jsgf_to_grammar(text: str, source: str = "<jsgf>", folder: Path | None = None) -> Grammar:
    """`folder`: where `import <name.rule>;` finds name.gram or name.jsgf (the file's own folder)."""
    name, rules = _parse_rules(text, source, folder, importing=())
    return _resolve(rules, source, name)


def _parse_rules(
    text: str, source: str, folder: Path | None, importing: tuple[str, ...]
) -> tuple[str, dict[str, _Rule]]:
    """The grammar's name and its rules, with the rules its imports name put in beside them."""
    tokens = _lex(text)
    rules: dict[str, _Rule] = {}
    imported: dict[str, _Rule] = {}
    name = "jsgf"
    i = 0
    while i < len(tokens):
        tok, line = tokens[i]
        if tok.startswith("#JSGF") or tok.lower().startswith("#jsgf"):
            i = _skip_to_semicolon(tokens, i, source)
            continue
        if tok == "grammar":
            if i + 1 < len(tokens):
                name = tokens[i + 1][0]
            i = _skip_to_semicolon(tokens, i, source)
            continue
        if tok == "import":
            target = tokens[i + 1][0] if i + 1 < len(tokens) else ""
            imported.update(_import(target, line, source, folder, (*importing, name)))
            i = _skip_to_semicolon(tokens, i, source)
            continue
        public = tok == "public"
        if public:
            i += 1
            if i >= len(tokens):
                raise GrammarError(f"{source}:{line}: 'public' with no rule after it")
            tok, line = tokens[i]
        if not (tok.startswith("<") and i + 1 < len(tokens) and tokens[i + 1][0] == "="):
            raise GrammarError(f"{source}:{line}: expected a rule '<name> = ...;', got '{tok}'")
        rule = tok[1:-1].strip()
        if rule in rules:
            raise GrammarError(f"{source}:{line}: rule <{rule}> is defined twice (first on line {rules[rule].line})")
        parser = _Parser(tokens, i + 2, source, rule)
        body = parser.alternatives(closer=";")
        rules[rule] = _Rule(rule, public, body, line)
        i = parser.pos
    # this file's own rules win over an imported rule of the same name
    return name, {**{k: v for k, v in imported.items() if k not in rules}, **rules}


def imported_file(folder: Path, grammar: str) -> Path | None:
    """Where `import <grammar.rule>;` finds its grammar: grammar.gram or .jsgf, a package's dots as folders."""
    stem = folder / grammar.replace(".", "/")
    return next((f for f in (stem.with_name(stem.name + e) for e in (".gram", ".jsgf")) if f.is_file()), None)


def _import(
    target: str, line: int, source: str, folder: Path | None, importing: tuple[str, ...]
) -> dict[str, _Rule]:
    """`import <g.rule>;` / `import <g.*>;`: g.gram or g.jsgf beside the file (dots of a package name are
    folders, as PocketSphinx looks them up). Every rule of g comes in as `g.rule`, never an intent; the
    public ones named also as `rule`, so `<rule>` and `<g.rule>` both reach them."""
    where = f"{source}:{line}: import {target}"
    if not (target.startswith("<") and target.endswith(">") and "." in target):
        raise GrammarError(f"{where}: expected <grammar.rule> or <grammar.*>")
    grammar, rule = target[1:-1].strip().rsplit(".", 1)
    if grammar in importing:
        raise GrammarError(f"{where}: {grammar} imports itself ({' -> '.join((*importing, grammar))})")
    found = imported_file(Path(folder or "."), grammar)
    if found is None:
        stem = Path(folder or ".") / grammar.replace(".", "/")
        raise GrammarError(f"{where}: no {stem}.gram or {stem}.jsgf")
    text = read_text_file(found)
    _, theirs = _parse_rules(text, str(found), found.parent, importing)
    local = [n for n in theirs if "." not in n]  # in file order: the grammar is the same every run
    qualify = {n: f"{grammar}.{n}" for n in local}

    def requalified(node: object) -> object:
        if isinstance(node, _Ref):
            return _Ref(qualify.get(node.name, node.name), node.line)
        if isinstance(node, Seq):
            return Seq(tuple(requalified(i) for i in node.items))
        if isinstance(node, Alt):
            return Alt(tuple(requalified(o) for o in node.options))
        if isinstance(node, Opt):
            return Opt(requalified(node.item))
        return node

    rules = {}
    for n, r in theirs.items():
        rules[qualify.get(n, n)] = _Rule(qualify.get(n, n), False, requalified(r.body), r.line, r.source or str(found))
    named = [n for n in local if theirs[n].public] if rule == "*" else [rule]
    for n in named:
        if n not in theirs or not theirs[n].public:
            problem = "has no rule" if n not in theirs else "keeps private"
            raise GrammarError(f"{where}: {found} {problem} <{n}>")
        rules[n] = _Rule(n, False, rules[qualify[n]].body, theirs[n].line, theirs[n].source or str(found))
    return rules


def _lex(text: str) -> list[tuple[str, int]]:
    # comments out, line numbers kept
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    tokens = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().lower().startswith("#jsgf"):
            # the header ends at its ';'; the Web Speech API's one-line grammars go on after it
            tokens.append(("#JSGF", number))
            if ";" not in line:
                continue
            tokens.append((";", number))
            line = line.split(";", 1)[1]
        tokens += [(tok, number) for tok in _TOKEN.findall(line)]
    return tokens


def _skip_to_semicolon(tokens: list[tuple[str, int]], i: int, source: str) -> int:
    line = tokens[i][1]
    while i < len(tokens) and tokens[i][0] != ";":
        i += 1
    if i >= len(tokens):
        raise GrammarError(f"{source}:{line}: missing ';'")
    return i + 1


class _Parser:
    def __init__(self, tokens: list[tuple[str, int]], pos: int, source: str, rule: str) -> None:
        self.tokens, self.pos, self.source, self.rule = tokens, pos, source, rule

    def error(self, problem: str) -> GrammarError:
        line = self.tokens[min(self.pos, len(self.tokens) - 1)][1]
        return GrammarError(f"{self.source}:{line}: rule <{self.rule}>: {problem}")

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def alternatives(self, closer: str) -> object:
        options = [self.sequence(closer)]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence(closer))
        tok = self.peek()
        if tok is None:
            raise self.error(f"unbalanced: no closing '{closer}'" if closer != ";" else "missing ';'")
        if tok != closer:
            raise self.error(f"unbalanced brackets: '{tok}' where '{closer}' closes")
        self.pos += 1
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self, closer: str) -> object:
        items: list[object] = []
        repeated: tuple[object, bool] | None = None  # items[-1] before its `*`/`+`, and whether it may be left out
        while self.peek() not in (None, "|", ")", "]", ";"):
            tok, line = self.tokens[self.pos]
            self.pos += 1
            if tok.startswith("/") and tok.endswith("/") and len(tok) > 1:
                continue  # a weight: ignored
            if tok.startswith("{"):
                continue  # a tag: ignored
            if tok in ("*", "+"):
                if not items:
                    raise self.error(f"'{tok}' repeats nothing: put it after a word, a rule or a group")
                # `x**`, `x+*`: one repetition, as PocketSphinx reads them (unrolled twice it would be 5^n)
                base, optional = repeated if repeated is not None else (items[-1], False)
                repeated = (base, optional or tok == "*")
                items[-1] = _repeat(*repeated)
                continue
            if tok == "=":
                raise self.error("'=' inside a rule: missing ';' before the next rule?")
            repeated = None
            if tok == "(":
                items.append(self.alternatives(")"))
            elif tok == "[":
                items.append(Opt(self.alternatives("]")))
            elif tok.startswith("<"):
                ref = tok[1:-1].strip()
                items.append({"NULL": _NULL, "VOID": _VOID}.get(ref) or _Ref(ref, line))
            else:
                items.append(Word(tok.strip('"')))
        if not items:
            raise self.error("empty alternative")
        return items[0] if len(items) == 1 else Seq(tuple(items))


def _repeat(item: object, optional: bool) -> object:
    """`item+` as "item, or item item, ... up to REPEAT_MAX times"; `item*` the same or nothing."""
    times = Alt(tuple(item if n == 1 else Seq((item,) * n) for n in range(1, REPEAT_MAX + 1)))
    return Opt(times) if optional else times


def _word_list(body: object) -> list[tuple[str, ...]] | None:
    """The values of a rule that is only plain word alternatives, else None."""
    options = body.options if isinstance(body, Alt) else (body,)
    values = []
    for option in options:
        if option is _VOID:  # never said: not a value
            continue
        if isinstance(option, Word):
            values.append((option.text,))
        elif isinstance(option, Seq) and all(isinstance(i, Word) for i in option.items):
            values.append(tuple(i.text for i in option.items))
        else:
            return None
    return values if len(values) > 1 else None


def _references(node: object, grammar: str) -> set[str]:
    if isinstance(node, _Ref):
        return {node.name, node.name.removeprefix(f"{grammar}.")}
    if isinstance(node, Seq | Alt):
        parts = node.items if isinstance(node, Seq) else node.options
        return set().union(*(_references(p, grammar) for p in parts))
    if isinstance(node, Opt):
        return _references(node.item, grammar)
    return set()


def _recursive_rules(rules: dict[str, _Rule], grammar: str) -> tuple[set[str], set[str]]:
    """The rules that can reach themselves, and those that reach one of them: how such a rule unrolls
    depends on how deep in the recursion it is used, so its expansion is never shared between uses."""
    calls = {name: _references(rule.body, grammar) & rules.keys() for name, rule in rules.items()}
    reach = {}
    for start in rules:
        seen, todo = set(), list(calls[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(calls[name])
        reach[start] = seen
    recursive = {name for name in rules if name in reach[name]}
    return recursive, {name for name in rules if reach[name] & recursive}


def _resolve(rules: dict[str, _Rule], source: str, name: str) -> Grammar:
    slots: dict[str, Slot] = {}
    done: dict[str, Expr] = {}
    recursive, reaching = _recursive_rules(rules, name)

    def expand(node: object, stack: tuple[str, ...]) -> Expr | _Void | None:
        if isinstance(node, _Ref):
            if node.name not in rules and node.name.removeprefix(f"{name}.") in rules:
                node = _Ref(node.name.removeprefix(f"{name}."), node.line)  # <grammar.rule>: this file's own
            if node.name not in rules:
                where = rules[stack[-1]].source or source if stack[-1] in rules else source
                raise GrammarError(f"{where}:{node.line}: rule <{stack[-1]}> uses <{node.name}>, which is never defined")
            target = rules[node.name]
            if node.name in recursive:
                # REPEAT_MAX recursive rules inside one another, whichever they are: rules that call each
                # other (a sentence grammar's noun and verb phrases) would otherwise unroll to 5^rules
                if sum(r in recursive for r in stack) >= REPEAT_MAX:
                    return _VOID  # deep enough: only the ways out are left
                return expand(target.body, (*stack, node.name))
            if node.name in reaching:
                return expand(target.body, (*stack, node.name))
            if node.name not in done:
                values = None if target.public else _word_list(target.body)
                if values is not None:
                    slots[node.name] = Slot(node.name, tuple(SlotValue(v, " ".join(v)) for v in values))
                    done[node.name] = SlotRef(node.name)
                else:
                    done[node.name] = expand(target.body, (*stack, node.name))
            return done[node.name]
        # None: says nothing (<NULL>); _VOID: can never be said
        if isinstance(node, Seq):
            items = [expand(i, stack) for i in node.items]
            if any(i is _VOID for i in items):
                return _VOID
            return sequence_of(items)
        if isinstance(node, Alt):
            options = [o for o in (expand(o, stack) for o in node.options) if o is not _VOID]
            return choice_of(options) if options else _VOID
        if isinstance(node, Opt):
            item = expand(node.item, stack)
            return None if item is None or item is _VOID else Opt(item)
        if node is _NULL:
            return None
        return node  # Word or _VOID

    for rule in rules.values():
        if rule.name in recursive and expand(rule.body, (rule.name,)) is _VOID:
            raise GrammarError(
                f"{rule.source or source}:{rule.line}: rule <{rule.name}> is recursive with no way out: every alternative "
                "uses it again"
            )
    publics = [r for r in rules.values() if r.public]
    if not publics:
        raise GrammarError(f"{source}: no public rule: nothing to say")
    templates = []
    for rule in publics:
        expr = expand(rule.body, (rule.name,))
        if expr is None or expr is _VOID:
            problem = "says nothing (only <NULL>)"
            if expr is _VOID:
                problem = "can never be said (<VOID> in every alternative)"
            raise GrammarError(f"{source}:{rule.line}: public rule <{rule.name}> {problem}")
        templates.append(Template(rule.name, render(expr), expr))
    for rule in rules.values():  # rules nobody uses are still checked
        if not rule.public and rule.name not in done:
            expand(rule.body, (rule.name,))
    return Grammar(name, templates, slots)


def _rule_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _intent_rule(intent: str) -> str:
    """An intent's rule name, kept apart from `<command>` and the `<slot_...>` rules."""
    name = _rule_name(intent)
    return f"intent_{name}" if name == "command" or name.startswith(("slot_", "intent_")) else name


def _jsgf_expr(expr: Expr, top: bool = True) -> str:
    if isinstance(expr, Word):
        return expr.text
    if isinstance(expr, SlotRef):
        return f"<slot_{_rule_name(expr.name)}>"
    if isinstance(expr, Opt):
        return "[ " + _jsgf_expr(expr.item) + " ]"
    if isinstance(expr, Seq):
        return " ".join(_jsgf_expr(i, top=False) for i in expr.items)
    body = " | ".join(_jsgf_expr(o, top=False) if isinstance(o, Alt) else _jsgf_expr(o) for o in expr.options)
    return body if top else "( " + body + " )"


def grammar_to_jsgf(grammar: Grammar, name: str | None = None) -> str:
    """The grammar as JSGF: `public <command>` is any intent; one rule per intent and per slot.

    >>> g = Grammar.build({"open": ["open the {app}"]}, {"app": ["browser", "music player"]})
    >>> print(grammar_to_jsgf(g, "commands"), end="")
    #JSGF V1.0;
    grammar commands;
    public <command> = <open>;
    <open> = open the <slot_app>;
    <slot_app> = browser | music player;
    """
    lines = ["#JSGF V1.0;", f"grammar {_rule_name(name or grammar.name)};"]
    intents = grammar.intents
    lines.append("public <command> = " + " | ".join(f"<{_intent_rule(i)}>" for i in intents) + ";")
    for intent, templates in intents.items():
        body = " | ".join(
            f"( {_jsgf_expr(t.expr)} )" if isinstance(t.expr, Alt) and len(templates) > 1 else _jsgf_expr(t.expr)
            for t in templates
        )
        lines.append(f"<{_intent_rule(intent)}> = {body};")
    for slot in grammar.used_slots():
        values = " | ".join(" ".join(v.words) for v in grammar.slots[slot].values)
        lines.append(f"<slot_{_rule_name(slot)}> = {values};")
    return "\n".join(lines) + "\n"


def load_jsgf(path: str) -> Grammar:
    return jsgf_to_grammar(read_text_file(path), str(path), Path(path).parent)
