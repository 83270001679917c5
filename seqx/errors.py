"""User-facing errors: each carries one line the CLI prints as it is (no traceback)."""


class SeqxError(Exception):
    """Bad input or a missing prerequisite: the message names the file/setting and the problem."""


class RecipeError(ValueError):
    """A recipe or override that cannot be used; the message is one printable line.

    Here rather than in seqx.recipe so that what raises it (the grammar package) imports
    without pydantic: the torch-free runtime parses intents with that package.
    """


class AudioError(SeqxError):
    """An audio file that cannot be used (missing, corrupt, empty, NaN...)."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class DiskFullError(SeqxError):
    """A write ran out of space (ENOSPC, or EFBIG under a file-size limit); what was there is intact."""


def yaml_problem(err: Exception) -> tuple[int | None, str]:
    """(1-based line or None, what is wrong) of a YAML parse error: the parts of a one-line message
    that recipes and grammar files each word in their own way."""
    mark = getattr(err, "problem_mark", None)
    return (mark.line + 1 if mark is not None else None), str(getattr(err, "problem", err))
