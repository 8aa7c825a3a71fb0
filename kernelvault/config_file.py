"""The YAML files of the config-driven commands (`kernelvault sft`, `kernelvault rl`): which file `--config`
names, the mapping it holds, and what its relative paths are relative to.

    --config SPEC ──find_config──► a file (SPEC itself, or the bundled config named SPEC)
                  ──read_config──► {field: value}, relative input paths resolved (`resolve_paths`)

- `--config` names a file, or a config shipped in the package by its name (`--config tiny`, `tiny.yaml`):
  `sft/configs/` for `sft`, `rl/configs/` for `rl`. A file that is there wins over a bundled name.
- A relative path in an input field (a field whose metadata has `path`: the model, the dataset, the tasks)
  names what is beside the config: in the config file's folder for a user's config; for a bundled config,
  the package's own data (`tasks/…`, `examples/…`). Where nothing is there, the path stays as written,
  relative to the current folder: a model an earlier step wrote to `out/`, or a Hub id (`Qwen/Qwen3-8B`)
  that only looks like a path.
- Not resolved: output folders (`output_dir`, relative to the current folder, as every command's `--out` is)
  and values given on the command line (the user typed them where they stand).

`field_help` is the one place a field's help text gets its default, for both commands' `--help`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from pathlib import Path
from typing import Any

import yaml

# The folder that holds the bundled data: the checkout's root, or the installed `kernelvault/` package.
PACKAGE_DATA = Path(str(importlib.resources.files("kernelvault.tasks"))).resolve().parent
BUNDLED_DATA = ("tasks", "examples")  # what a bundled config's relative paths may name in PACKAGE_DATA


class ConfigFileError(ValueError):
    """A config file that is not there or not a YAML mapping (one-line message)."""


def bundled_configs(package: str) -> Path:
    """The folder of configs shipped with `package` (`kernelvault.rl`, `kernelvault.sft`)."""
    return Path(str(importlib.resources.files(package))).resolve() / "configs"


def find_config(spec: str | Path, bundled: Path) -> Path:
    """The file `spec` names: a file that exists, else the bundled config of that name."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.parent == Path(".") and path.name:  # a bare name: `tiny` or `tiny.yaml`
        for candidate in (bundled / path.name, bundled / f"{path.name}.yaml"):
            if candidate.is_file():
                return candidate
    names = ", ".join(sorted(file.stem for file in bundled.glob("*.yaml")))
    raise ConfigFileError(f"config file not found: {spec} (and no bundled config of that name: {names})")


def is_bundled(path: Path) -> bool:
    return path.resolve().parent.parent.parent == PACKAGE_DATA and path.resolve().parent.name == "configs"


def read_config(spec: str | Path, bundled: Path, config_class: type) -> tuple[Path, dict[str, Any]]:
    """The config file `spec` names and its settings, with the relative paths of `config_class`'s input
    fields resolved (`resolve_paths`). Keys are checked by the caller (each command says which it knows)."""
    path = find_config(spec, bundled)
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigFileError(f"cannot read the config file {path}: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigFileError(f"{path} is not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise ConfigFileError(f"{path} must hold a mapping of settings")
    return path, resolve_paths(loaded, path, config_class)


def resolve_paths(values: dict[str, Any], config_path: Path, config_class: type) -> dict[str, Any]:
    """`values` with each relative path of an input field made absolute where it names something beside the
    config (see the module docstring); a field's metadata `path` is True, or the suffix the path must have
    (`.jinja`: `chat_template` is a file only when it ends so, else a name such as `kernelvault`)."""
    bundled = is_bundled(config_path)
    base = PACKAGE_DATA if bundled else config_path.resolve().parent
    kinds = {item.name: item.metadata.get("path") for item in dataclasses.fields(config_class)}
    resolved = dict(values)
    for name, value in values.items():
        kind = kinds.get(name)
        if not kind or not isinstance(value, str) or not value:
            continue
        relative = Path(value).expanduser()
        if relative.is_absolute() or (isinstance(kind, str) and relative.suffix != kind):
            continue
        if bundled and relative.parts[0] not in BUNDLED_DATA:
            continue
        if (base / relative).exists():
            resolved[name] = str(base / relative)
    return resolved


def field_help(field: dataclasses.Field) -> str:
    """A field's help text with its default, unless the text already says it or there is none to say."""
    text = field.metadata.get("help", "")
    if field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        default = field.default
    if "default" in text or default is dataclasses.MISSING or default in ("", None, [], {}):
        return text
    return f"{text} (default: {default})"
