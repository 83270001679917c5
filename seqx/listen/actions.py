"""Recipe `actions:`: a recognized command -> a program run with the slot values as arguments.

An action is an argv list (`run: [notify-send, "battery", "{level}"]`), never a shell
line: `{slot}` is replaced inside each argument, so a slot value with spaces or `;` stays
one argument and cannot start a second command. Matching is by intent (with slot values
from `when:`) or, until a grammar gives intents, by exact normalized text. Nothing here
decides whether to run: `seqx listen` runs only with `--run`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from seqx.errors import SeqxError
from seqx.recipe import ActionSettings, TokenizerSettings
from seqx.tokenize.text import normalize_text


class ActionError(SeqxError):
    """An action that cannot be run (a missing program, a `{slot}` the command did not fill)."""


@dataclass
class ActionRun:
    """One started action, for the log."""

    argv: list[str]
    pid: int
    started: float  # time.time()
    process: subprocess.Popen[bytes]

    def to_json(self) -> dict[str, object]:
        return {"argv": self.argv, "pid": self.pid, "started": round(self.started, 3)}


def _norm(text: object) -> str:
    """Words compared without case or spacing; a slot's output may be a number (`12`) or a bool."""
    return " ".join(str(text).lower().split())


def _said(text: str) -> str:
    """An action's text as decoding spells it: "Check the battery!" is "check the battery"."""
    return normalize_text(text, TokenizerSettings())


def match_action(
    actions: Sequence[ActionSettings], text: str, intent: str | None = None, slots: dict[str, object] | None = None
) -> ActionSettings | None:
    """The first action whose intent (or text) and `when` slot values all match, or None."""
    slots = slots or {}
    for action in actions:
        if action.intent is not None and action.intent != intent:
            continue
        if action.text is not None and _said(action.text) != _said(text):
            continue
        if all(_norm(slots.get(k, "")) == _norm(v) for k, v in action.when.items()):
            return action
    return None


def render_argv(action: ActionSettings, text: str, slots: dict[str, object] | None = None) -> list[str]:
    """The action's argv with `{slot}` and `{text}` filled in, one argument each."""
    values = {**(slots or {}), "text": text}
    try:
        return [arg.format_map(values) for arg in action.run]
    except KeyError as err:
        raise ActionError(f"action {action.run}: the command has no slot {err.args[0]!r}") from None
    except (ValueError, IndexError) as err:
        raise ActionError(f"action {action.run}: bad placeholder ({err})") from None


def start_action(argv: list[str]) -> ActionRun:
    """Start `argv` without a shell and without waiting: a launched app must not stop the listening."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)  # noqa: S603 (argv, no shell: the point)
    except OSError as err:
        raise ActionError(f"action {argv[0]}: cannot run ({err.strerror or err})") from None
    return ActionRun(argv=argv, pid=process.pid, started=time.time(), process=process)
