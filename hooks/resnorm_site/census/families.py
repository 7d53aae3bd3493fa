"""Which folders of the installed transformers hold a decoder stack, and which class and
config build each one's text model.

A folder is a family. The auto mappings that transformers ships say what each of its
model types is for; the rules below, applied in order, leave a family out or keep it,
and the first rule that applies is the one the page names.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

# Why a family is left out, in the order the rules are applied (the page names them).
RULES = ("no_model", "encoder", "encoder_decoder", "no_lm", "no_config", "reuses")
NOT_FAMILIES = {"auto", "deprecated", "__pycache__"}
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel", "Decoder")
TEXT_SUFFIXES = ("_text", "_text_model")


class CensusError(Exception):
    """A family that does not exist, or a census that cannot be computed."""


@dataclass(frozen=True)
class Family:
    name: str  # the folder under transformers/models
    text_type: str  # the model type of its text decoder's config
    model_class: str  # the class built for the probe ("" when only the module can say)
    config_class: str


def version() -> str:
    return importlib.metadata.version("transformers")


def models_dir() -> Path:
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        raise CensusError("transformers is not installed")
    return Path(spec.origin).parent / "models"


def folders() -> list[str]:
    root = models_dir()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in NOT_FAMILIES)


def _mappings():
    from transformers.models.auto import configuration_auto, modeling_auto

    return configuration_auto, modeling_auto


def _types_by_folder() -> dict[str, list[str]]:
    configuration_auto, _ = _mappings()
    found: dict[str, list[str]] = {}
    for model_type in configuration_auto.CONFIG_MAPPING_NAMES:
        folder = configuration_auto.model_type_to_module_name(model_type)
        found.setdefault(folder, []).append(model_type)
    return found


def _name(value) -> str:
    return value[0] if isinstance(value, tuple | list) else value


def classify(folder: str) -> tuple[str, Family | None, str]:
    """(rule or "decoder", the family when kept, a detail: the family whose text decoder a
    left-out one reuses). Raises CensusError for a folder that is no family."""
    if folder not in set(folders()):
        raise CensusError(f"no model family {folder!r} in transformers {version()}")
    configuration_auto, modeling_auto = _mappings()
    types = _types_by_folder().get(folder, [])
    if not types:
        return "no_model", None, ""
    causal = modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    masked = modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    seq2seq = {
        **modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        **modeling_auto.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
    }
    multimodal = {
        **modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        **modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    }
    if any(t in masked for t in types):
        return "encoder", None, ""
    if any(t in seq2seq for t in types):
        return "encoder_decoder", None, ""
    if not any(t in causal or t in multimodal for t in types):
        return "no_lm", None, ""
    main = folder if folder in types else types[0]
    text_type = main
    try:
        config = configuration_auto.CONFIG_MAPPING[main]()
    except Exception:  # a default that fails its own validation: keep the family, unprobed
        config = None
    if config is not None:
        if getattr(config, "is_encoder_decoder", False):
            return "encoder_decoder", None, ""
        try:
            text_type = config.get_text_config(decoder=True).model_type
        except Exception:
            text_type = config.model_type
    elif main not in causal:
        return "no_config", None, ""
    owner = configuration_auto.model_type_to_module_name(text_type)
    if owner != folder:
        return "reuses", None, owner
    if not (text_type in causal or text_type.endswith(TEXT_SUFFIXES)):
        # a multimodal family whose decoder config is another part (audio): its text part
        text_type = next((t for t in types if t.endswith(TEXT_SUFFIXES)), text_type)
    model_class = _name(causal.get(text_type, ""))
    if not model_class.endswith(CAUSAL_SUFFIXES):
        model_class = _name(modeling_auto.MODEL_MAPPING_NAMES.get(text_type, ""))
    config_class = configuration_auto.CONFIG_MAPPING_NAMES[text_type]
    return "decoder", Family(folder, text_type, model_class, config_class), ""


def census_families() -> tuple[list[Family], dict[str, list[str]]]:
    """The decoder families, and the folders left out by each rule."""
    kept: list[Family] = []
    left_out: dict[str, list[str]] = {rule: [] for rule in RULES}
    for folder in folders():
        rule, family, detail = classify(folder)
        if family is not None:
            kept.append(family)
        else:
            left_out[rule].append(f"{folder}:{detail}" if detail else folder)
    return kept, left_out


def modeling_modules(family: Family) -> list:
    """The family's modeling modules: modeling_NAME.py first, then any other."""
    folder = models_dir() / family.name
    names = sorted(p.stem for p in folder.glob("modeling_*.py"))
    names.sort(key=lambda n: n != f"modeling_{family.name}")
    return [importlib.import_module(f"transformers.models.{family.name}.{n}") for n in names]


def model_class(family: Family):
    """The class to build: the mapped one, else the family's own causal-LM or text model
    class for its text config, found in its modeling modules."""
    import transformers

    if family.model_class:
        return getattr(transformers, family.model_class)
    config_class = config_class_of(family)
    candidates = [
        obj
        for module in modeling_modules(family)
        for obj in vars(module).values()
        if isinstance(obj, type)
        and obj.__module__ == module.__name__
        and hasattr(obj, "_can_record_outputs")
        and _config_of(obj) is config_class
    ]
    for suffixes in (CAUSAL_SUFFIXES, ("TextModel", "TextTransformer")):
        for cls in candidates:
            if cls.__name__.endswith(suffixes):
                return cls
    raise CensusError(f"{family.name}: no causal-LM or text model class for {family.text_type}")


def _config_of(cls):
    for klass in cls.__mro__:
        annotated = vars(klass).get("__annotations__", {}).get("config")
        if isinstance(annotated, type):
            return annotated
        if isinstance(annotated, str):
            module = importlib.import_module(klass.__module__)
            found = getattr(module, annotated, None)
            if isinstance(found, type):
                return found
    return getattr(cls, "config_class", None)


def config_class_of(family: Family):
    import transformers

    return getattr(transformers, family.config_class)
