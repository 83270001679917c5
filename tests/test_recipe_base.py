"""A recipe of one's own on the measured defaults (`base:`), and the recipes shipped in the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqx.errors import RecipeError
from seqx.grammar.load import load_grammar, open_grammar
from seqx.recipe import load_recipe
from seqx.recipe_files import SHIPPED, shipped_recipes

GRAM = """#JSGF V1.0;
grammar pizza;
public <order> = i would like a <size> pizza with <topping>;
<size> = small | medium | large;
<topping> = cheese | mushrooms | ham | olives;
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_three_line_recipe_gets_the_commands_recipe_with_its_own_grammar(tmp_path: Path) -> None:
    _write(tmp_path, "pizza.gram", GRAM)
    path = _write(tmp_path, "pizza.yaml", "base: commands\ndata:\n  synth:\n    grammar: pizza.gram\n")
    recipe, commands = load_recipe(path), load_recipe("commands")
    assert recipe.name == "pizza"  # its own name, so its own exp/pizza, not the base's
    # the grammar file beside the recipe, and nothing of the base's grammar left
    assert recipe.data.synth.grammar is not None and recipe.data.synth.grammar.file == str(tmp_path / "pizza.gram")
    assert not recipe.data.synth.grammar.intents
    grammar = load_grammar(recipe, path)
    assert grammar is not None and grammar.parse("i would like a large pizza with ham") is not None
    # everything else is what the commands recipe measured, its cpu profile included
    for section in ("features", "model", "train", "decode", "tokenizer"):
        assert getattr(recipe, section) == getattr(commands, section)
    assert recipe.data.synth.engines == commands.data.synth.engines
    assert recipe.data.synth.oog_share == commands.data.synth.oog_share
    assert recipe.for_device("cpu").model.d_model == commands.for_device("cpu").model.d_model


def test_what_the_recipe_sets_wins_over_the_base_and_its_device_profile(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "big.yaml",
        "base: commands\ndata:\n  size: 900\ntrain:\n  epochs: 20\n"
        "device_profiles:\n  cpu:\n    model.d_model: 96\n",
    )  # fmt: skip
    recipe = load_recipe(path)
    cpu = recipe.for_device("cpu")
    assert (cpu.data.size, cpu.train.epochs) == (900, 20)  # the base's cpu profile says 3000 and 18
    assert cpu.model.d_model == 96  # the recipe's own profile entry
    assert cpu.model.enc_layers == load_recipe("commands").for_device("cpu").model.enc_layers  # the rest stays
    assert cpu.data.synth.engines == load_recipe("commands").data.synth.engines
    # --set still wins over both
    assert load_recipe(path, ["data.size=700"]).for_device("cpu").data.size == 700


def test_a_base_beside_the_recipe_a_chain_and_the_older_grammar_form(tmp_path: Path) -> None:
    _write(tmp_path, "house.yaml", "base: commands\nfeatures:\n  embed_views: 2\n")
    path = _write(
        tmp_path, "mine.yaml",
        "base: house.yaml\ndata:\n  synth:\n    templates: ['open the {door}']\n    slots: {door: [gate, garage]}\n",
    )  # fmt: skip
    recipe = load_recipe(path)
    assert recipe.features.embed_views == 2 and recipe.features.kind == "speech_embedding"
    assert recipe.data.synth.grammar is None and recipe.data.synth.templates == ["open the {door}"]
    assert recipe.name == "mine"


def test_a_bad_base_is_one_line_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"a\.yaml: base: no recipe 'nothing' \(shipped: commands, smarthome"):
        load_recipe(_write(tmp_path, "a.yaml", "base: nothing\n"))
    with pytest.raises(RecipeError, match=r"b\.yaml: base: expected a recipe name or file"):
        load_recipe(_write(tmp_path, "b.yaml", "base: [commands]\n"))
    _write(tmp_path, "c.yaml", "base: d.yaml\n")
    with pytest.raises(RecipeError, match=r"base: the recipe is its own base \(d\.yaml -> c\.yaml -> d\.yaml\)"):
        load_recipe(_write(tmp_path, "d.yaml", "base: c.yaml\n"))
    with pytest.raises(RecipeError, match=r"e\.yaml: model\.d_modle: unknown key"):
        load_recipe(_write(tmp_path, "e.yaml", "base: commands\nmodel:\n  d_modle: 3\n"))


def test_shipped_recipes_are_found_where_there_is_no_recipes_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pip-installed seqx has no recipes/ beside it: the default and the names still work."""
    monkeypatch.chdir(tmp_path)
    assert set(shipped_recipes()) == {p.stem for p in SHIPPED.glob("*.yaml")} >= {"commands", "smarthome"}
    assert load_recipe().name == "commands" and load_recipe().exp_dir == "exp"
    assert load_recipe("smarthome").name == "smarthome"
    assert open_grammar("recipes/commands.yaml").parse("scroll up") is not None
    with pytest.raises(RecipeError, match=r"elsewhere/commands\.yaml: no such recipe file"):
        load_recipe("elsewhere/commands.yaml")  # a path somewhere else is that path, not a shipped name
