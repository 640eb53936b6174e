"""Do environment.yml and requirements.txt name the same packages at the same versions?"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pins(lines):
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip().lstrip("-").strip()
        m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*==\s*([^\s;]+)$", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_conda_and_pip_agree():
    pip = _pins((ROOT / "requirements.txt").read_text().splitlines())
    yml = (ROOT / "environment.yml").read_text().split("- pip:", 1)[1]
    conda = _pins(yml.splitlines())
    assert pip, "requirements.txt pins nothing"
    assert pip == conda, (
        f"requirements.txt vs environment.yml differ: {set(pip.items()) ^ set(conda.items())}"
    )


def test_torch_is_pinned_to_the_cpu_wheel_on_disk():
    pip = _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert pip.get("torch") == "2.13.0", "an unpinned torch pulls a multi-GB CUDA build"
