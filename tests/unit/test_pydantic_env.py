"""The CLI switches pydantic's plugins off and skips their loader's import
(kbgraph/_pydantic_env.py): ``importlib.metadata`` alone was ~0.05 CPU-s of a cold
``kbgraph search``. Checked in fresh processes against a real plugin, installed as pydantic
finds one (an entry point of the ``pydantic`` group in a distribution on ``sys.path``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PLUGIN = """
seen = []

class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind,
                             config, plugin_settings):
        seen.append(schema_type_path.name)
        return None, None, None

plugin = Plugin()
"""

_CHILD = """
import json, sys
import kbgraph.cli  # what every command imports first
from pydantic import BaseModel

class Probe(BaseModel):
    x: int

Probe(x=1)
import watching_plugin
loader = sys.modules["pydantic.plugin._loader"]
print(json.dumps({
    "plugin_saw": watching_plugin.seen,
    "metadata_loaded": "importlib.metadata" in sys.modules,
    "stand_in": getattr(loader, "__file__", None) is None,
}))
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a plugin module and the distribution that declares it."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "watching_plugin.py").write_text(_PLUGIN, encoding="utf-8")
    info = root / "watching_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: watching-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nwatching = watching_plugin:plugin\n")
    return root


def _run(plugin_path: Path, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    path = os.pathsep.join([str(plugin_path), clean.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env={**clean, "PYTHONPATH": path, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_command_builds_models_without_plugins_or_importlib_metadata(plugin_path: Path) -> None:
    assert _run(plugin_path) == {"plugin_saw": [], "metadata_loaded": False, "stand_in": True}


def test_plugins_the_user_asked_for_are_loaded_by_pydantic_itself(plugin_path: Path) -> None:
    result = _run(plugin_path, PYDANTIC_DISABLE_PLUGINS="")
    assert result["plugin_saw"] and "Probe" in result["plugin_saw"]  # type: ignore[operator]
    assert result["stand_in"] is False


def test_a_named_plugin_switched_off_leaves_the_others_to_pydantic(plugin_path: Path) -> None:
    result = _run(plugin_path, PYDANTIC_DISABLE_PLUGINS="some-other-plugin")
    assert "Probe" in result["plugin_saw"]  # type: ignore[operator]


def test_any_other_name_asked_of_the_stand_in_loads_pydantics_loader() -> None:
    """A pydantic that needs more of its loader than ``get_plugins`` still gets it."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, kbgraph._pydantic_env as env\n"
            "stand_in = sys.modules[env.LOADER_NAME]\n"
            "assert stand_in is env.LOADER and list(stand_in.get_plugins()) == []\n"
            "group = stand_in.PYDANTIC_ENTRY_POINT_GROUP\n"
            "real = sys.modules[env.LOADER_NAME]\n"
            "print(group, real is not stand_in, real.__file__.endswith('_loader.py'))",
        ],
        env={k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["pydantic", "True", "True"]
