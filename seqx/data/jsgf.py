"""The recipe's command grammar as JSGF: how offline voice commands are built with PocketSphinx.

One rule per slot, one per template, and a public rule that is any template, so the
grammar accepts exactly the commands `expand_grammar` lists.

>>> print(grammar_to_jsgf(["open the {app}"], {"app": ["browser", "music player"]}), end="")
#JSGF V1.0;
grammar commands;
public <command> = <t0>;
<t0> = open the <app>;
<app> = browser | music player;
"""

from __future__ import annotations

import re

from seqx.data.grammar import template_slots


def _rule(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def grammar_to_jsgf(templates: list[str], slots: dict[str, list[str]], name: str = "commands") -> str:
    lines = ["#JSGF V1.0;", f"grammar {name};"]
    lines.append("public <command> = " + " | ".join(f"<t{i}>" for i in range(len(templates))) + ";")
    for i, template in enumerate(templates):
        body = template
        for slot in template_slots(template):
            body = body.replace("{" + slot + "}", f"<{_rule(slot)}>")
        lines.append(f"<t{i}> = {' '.join(body.split())};")
    used = sorted({s for t in templates for s in template_slots(t)})
    for slot in used:
        lines.append(f"<{_rule(slot)}> = " + " | ".join(" ".join(v.split()) for v in slots[slot]) + ";")
    return "\n".join(lines) + "\n"
