"""Where a recipe's settings come from: its file, the recipes shipped in the package, and `base:`.

Why: the measured defaults (the speech embedding, four engines, views, out-of-grammar strings,
the cpu profile) live in `recipes/commands.yaml`, not in the schema's defaults, which keep the
plainest choice for each key. A user with a grammar of their own should start from those
measurements without copying 150 lines, and a `pip install`ed seqx, which has no `recipes/`
folder beside it, should still find them. So:

- the recipes ship inside the package (seqx/recipes/; the repository's `recipes/` links to it);
  a recipe path that does not exist but names a shipped recipe (`commands`, `smarthome.yaml`,
  the default `recipes/commands.yaml`) is read from there;
- a recipe may say `base: commands` (a shipped recipe, or a YAML file beside it) and only what
  differs: sections merge key by key, a list or a value replaces the base's, a grammar replaces
  the base's grammar whichever form either uses, and a key the recipe sets wins over the base's
  device profiles as `--set` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from seqx.constants import DEFAULT_RECIPE
from seqx.errors import RecipeError, yaml_problem
from seqx.text_files import read_text_file
from seqx.yaml_load import load_yaml

SHIPPED = Path(__file__).resolve().parent / "recipes"
GRAMMAR_FORMS = ("grammar", "templates", "slots")  # data.synth keys that together say one grammar


def shipped_recipes() -> dict[str, Path]:
    """Name -> file of every recipe in the package (commands, smarthome)."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.yaml"))}


def find_recipe(path: str | Path) -> Path:
    """The file a recipe argument means: the path when it exists, else the shipped recipe it names."""
    path = Path(path)
    if path.is_file():
        return path
    shipped = shipped_recipes()
    named = path.stem if path.suffix in ("", ".yaml", ".yml") else None
    default_like = path == DEFAULT_RECIPE or path.parent in (Path("."), Path("recipes"))
    if named in shipped and default_like:
        return shipped[named]
    raise RecipeError(f"{path}: no such recipe file (shipped recipes: {', '.join(shipped)})")


def read_recipe_file(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The recipe's raw mapping with its `base:` merged in (recursively) and its grammar file found."""
    resolved = path.resolve()
    if resolved in seen:
        raise RecipeError(f"{path}: base: the recipe is its own base ({' -> '.join(p.name for p in (*seen, path))})")
    try:
        raw = load_yaml(read_text_file(path)) or {}
    except yaml.YAMLError as err:
        line, problem = yaml_problem(err)
        where = f" (line {line})" if line is not None else ""
        raise RecipeError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise RecipeError(f"{path}: the recipe must be a mapping of sections, not {type(raw).__name__}")
    raw.setdefault("name", path.stem)
    grammar_file_beside(raw, path)
    base = raw.pop("base", None)
    if base is None:
        return raw
    if not isinstance(base, str) or not base.strip():
        raise RecipeError(f"{path}: base: expected a recipe name or file, got {base!r}")
    return merge_recipe(read_recipe_file(_base_file(base.strip(), path), (*seen, resolved)), raw)


def _base_file(base: str, path: Path) -> Path:
    """`base:` as a file beside the recipe (or as given), else a shipped recipe's name."""
    for candidate in (path.parent / base, Path(base)):
        if candidate.is_file():
            return candidate
    shipped = shipped_recipes()
    stem = Path(base).stem
    if stem in shipped and Path(base).parent == Path("."):
        return shipped[stem]
    raise RecipeError(f"{path}: base: no recipe {base!r} (shipped: {', '.join(shipped)}; or a YAML file)")


def merge_recipe(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """`child` over `base`: sections merge, values and lists replace, one grammar replaces the other."""
    profiles = _profiles_without(base.get("device_profiles"), _leaf_keys(child, exclude="device_profiles"))
    merged = _merge(base, child, ())
    for kind, overrides in (child.get("device_profiles") or {}).items():
        if isinstance(overrides, dict):
            profiles[kind] = {**profiles.get(kind, {}), **overrides}
    if profiles or "device_profiles" in merged:
        merged["device_profiles"] = profiles
    return merged


def _merge(base: dict[str, Any], child: dict[str, Any], where: tuple[str, ...]) -> dict[str, Any]:
    out = dict(base)
    if where == ("data", "synth") and any(k in child for k in GRAMMAR_FORMS):
        for key in GRAMMAR_FORMS:  # the child's grammar is the whole grammar, in whichever form
            out.pop(key, None)
    for key, value in child.items():
        if key == "device_profiles" and not where:
            continue
        old = out.get(key)
        grammar = where == ("data", "synth") and key in GRAMMAR_FORMS
        if isinstance(value, dict) and isinstance(old, dict) and not grammar:
            out[key] = _merge(old, value, (*where, key))
        else:
            out[key] = value
    return out


def _leaf_keys(raw: dict[str, Any], exclude: str) -> list[str]:
    """Dotted paths of every value the recipe sets (a grammar counts as one value)."""
    keys: list[str] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path == exclude:
                continue
            if isinstance(value, dict) and path not in ("data.synth.grammar", "data.synth.slots"):
                walk(value, f"{path}.")
            else:
                keys.append(path)

    walk(raw, "")
    return keys


def _profiles_without(profiles: Any, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The base's device profiles less every override of a key the child sets (what it wrote wins)."""
    out: dict[str, dict[str, Any]] = {}
    for kind, overrides in (profiles or {}).items():
        if not isinstance(overrides, dict):
            continue
        out[kind] = {
            k: v for k, v in overrides.items()
            if not any(k == p or k.startswith(f"{p}.") or p.startswith(f"{k}.") for p in keys)
        }  # fmt: skip
    return out


def grammar_file_beside(raw: dict[str, Any], path: Path) -> None:
    """`grammar: FILE` names a file as given, or else one beside the recipe: then the recipe
    holds that path, so every stage (and its cache key) finds the same file from any directory."""
    synth = (raw.get("data") or {}).get("synth") if isinstance(raw.get("data"), dict) else None
    if not isinstance(synth, dict):
        return
    grammar = synth.get("grammar")
    if isinstance(grammar, dict) and isinstance(grammar.get("slots"), dict):  # slot files: `song: songs.txt`
        grammar["slots"] = {name: beside_recipe(values, path) if isinstance(values, str) else values
                            for name, values in grammar["slots"].items()}  # fmt: skip
    file = grammar if isinstance(grammar, str) else grammar.get("file") if isinstance(grammar, dict) else None
    if isinstance(file, str):
        found = beside_recipe(file, path)
        synth["grammar"] = {**grammar, "file": found} if isinstance(grammar, dict) else found


def beside_recipe(file: str, path: Path) -> str:
    """A file the recipe at `path` names: as given when it exists (or is absolute), else the one beside
    the recipe when that exists, else as given (whoever opens it says it is missing)."""
    if Path(file).is_absolute() or Path(file).exists() or not (path.parent / file).exists():
        return file
    return str(path.parent / file)
