"""The recipe schema: every wrong setting is one line naming the file, the key path and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqx.recipe import Recipe, RecipeError, load_recipe, recipe_from_dict


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return path


def test_defaults_validate_and_name_comes_from_file(tmp_path: Path) -> None:
    recipe = load_recipe(_write(tmp_path, "model:\n  d_model: 128\n"))
    assert recipe.name == "r"
    assert recipe.model.d_model == 128
    assert recipe.root == Path("exp/r")


def test_unknown_key_names_path_and_suggests(tmp_path: Path) -> None:
    path = _write(tmp_path, "model:\n  head: 4\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    message = str(err.value)
    assert message == f"{path}: model.head: unknown key, did you mean model.heads?"
    assert "\n" not in message


def test_unknown_section(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"modle: unknown key, did you mean model\?"):
        load_recipe(_write(tmp_path, "modle: {}\n"))


def test_divisibility_message(tmp_path: Path) -> None:
    path = _write(tmp_path, "model:\n  d_model: 250\n  heads: 4\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(err.value) == f"{path}: model.d_model: must be divisible by model.heads (250 vs 4)"


def test_out_of_range_names_key_and_value(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"train\.lr: .*greater than 0.*-0\.1"):
        load_recipe(_write(tmp_path, "train:\n  lr: -0.1\n"))


def test_override_of_nested_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "model:\n  d_model: 128\n")
    recipe = load_recipe(path, ["model.d_model=192", "data.synth.snr_db=[5, 20]", "train.schedule=noam"])
    assert recipe.model.d_model == 192
    assert recipe.data.synth.snr_db == (5.0, 20.0)
    assert recipe.train.schedule == "noam"


def test_override_errors_name_the_override(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    with pytest.raises(RecipeError, match=r"model\.d_modle: unknown key, did you mean model\.d_model\?"):
        load_recipe(path, ["model.d_modle=3"])
    with pytest.raises(RecipeError, match="expected KEY=VALUE"):
        load_recipe(path, ["model.d_model"])
    with pytest.raises(RecipeError, match=r"--set model\.d_model\.x: d_model is a setting, not a section"):
        load_recipe(path, ["model.d_model.x=1"])


def test_frontend_none_needs_matching_width() -> None:
    with pytest.raises(RecipeError, match="must equal the feature width 80"):
        recipe_from_dict({"model": {"frontend": "none", "d_model": 64, "heads": 4}})
    ok = recipe_from_dict({"model": {"frontend": "none", "d_model": 80, "heads": 4}})
    assert ok.model.d_model == ok.features.n_feats


def test_cross_field_feature_checks() -> None:
    with pytest.raises(RecipeError, match=r"features\.hop_ms: 30.0 is larger than features\.win_ms"):
        recipe_from_dict({"features": {"hop_ms": 30, "win_ms": 25}})


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no such recipe file"):
        load_recipe(tmp_path / "nope.yaml")
    with pytest.raises(RecipeError, match=r"not valid YAML \(line \d+\)"):
        load_recipe(_write(tmp_path, "model:\n  d_model: [1\n"))


def test_device_profile_applies_and_is_validated() -> None:
    recipe = recipe_from_dict({"device_profiles": {"cpu": {"model.d_model": 128, "data.size": 100}}})
    cpu = recipe.for_device("cpu")
    assert (cpu.model.d_model, cpu.data.size) == (128, 100)
    assert recipe.for_device("cuda") is recipe
    bad = recipe_from_dict({"device_profiles": {"cpu": {"model.d_model": 130}}})
    with pytest.raises(RecipeError, match=r"device_profiles\.cpu: model\.d_model: must be divisible"):
        bad.for_device("cpu")


def test_recipe_is_frozen() -> None:
    recipe = Recipe()
    with pytest.raises(Exception):
        recipe.model.d_model = 3  # type: ignore[misc]


def test_default_recipe_loads() -> None:
    recipe = load_recipe("recipes/commands.yaml")
    assert recipe.name == "commands"
    assert recipe.data.source == "synth"
    for kind in ("cpu", "cuda"):
        recipe.for_device(kind)


def test_the_full_recipe_trains_on_clipped_starts_and_the_demo_does_not() -> None:
    """Measured on the full recipe (docs/benchmarks.md); the cpu profile is left without the copies'
    14% more utterances, and a command-line value beats the profile on either."""
    recipe = load_recipe("recipes/commands.yaml")
    assert recipe.for_device("cuda").data.synth.clipped_share == 0.1
    assert recipe.for_device("cpu").data.synth.clipped_share == 0
    on_cpu = load_recipe("recipes/commands.yaml", ["data.synth.clipped_share=0.1"]).for_device("cpu")
    assert on_cpu.data.synth.clipped_share == 0.1


def test_command_line_override_beats_device_profile(tmp_path: Path) -> None:
    path = _write(tmp_path, "device_profiles:\n  cpu:\n    model.d_model: 128\n    train.epochs: 3\n")
    recipe = load_recipe(path, ["model.d_model=64"]).for_device("cpu")
    assert recipe.model.d_model == 64
    assert recipe.train.epochs == 3


def test_a_word_where_a_number_or_auto_goes_is_said_once() -> None:
    with pytest.raises(RecipeError, match=r"tokenizer\.vocab_size: expected a number or auto \(got 'autox'\)$"):
        load_recipe("recipes/commands.yaml", ["tokenizer.vocab_size=autox"])
    with pytest.raises(RecipeError, match=r"decode\.reject_margin: expected a number or auto"):
        load_recipe("recipes/commands.yaml", ["decode.reject_margin=loose"])
    too_few = r"tokenizer\.vocab_size: input should be greater than or equal to 8 \(got 4\)"
    with pytest.raises(RecipeError, match=too_few):
        load_recipe("recipes/commands.yaml", ["tokenizer.vocab_size=4"])
