"""Pages that restate the code say what the code says (issue 21).

- docs/op-builders.md is what tools/gen_op_builders.py writes from the op
  classes now (regenerate it with the tool when an op changes).
- The README's table of target fields names every field of
  `TargetProfile`, once, with the CPU and GPU profiles' real defaults.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from accy.dialects.target import CPU_PROFILE, FIELDS, GPU_PROFILE

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_op_builders  # noqa: E402


def test_op_builders_page_is_generated_from_the_op_classes() -> None:
    assert gen_op_builders.PAGE.read_text() == gen_op_builders.render(), (
        "docs/op-builders.md is stale: run python tools/gen_op_builders.py"
    )


def test_op_builders_page_lists_every_op_with_a_contract_section() -> None:
    from accy.dialects.accy import Accy

    page = gen_op_builders.PAGE.read_text()
    sections = gen_op_builders.contract_sections((ROOT / "docs" / "op-contract.md").read_text())
    for op in Accy.operations:
        assert f"`{op.__name__}(" in page, op.name
        assert op.name in sections, f"docs/op-contract.md has no section naming {op.name}"


_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _value(cell: str) -> object:
    """A default as the table writes it: `name`, `""`, true/false, 4096 or 16 MiB."""
    text = cell.strip().strip("`")
    if text == '""':  # the empty string
        return ""
    if text in ("true", "false"):
        return text == "true"
    match = re.fullmatch(r"(\d+)(?: (KiB|MiB|GiB))?", text)
    if match:
        return int(match.group(1)) * _UNITS.get(match.group(2) or "", 1)
    return text


def readme_target_table() -> dict[str, tuple[object, object]]:
    """field -> (cpu default, gpu default), from the README's table headed
    `| field | cpu | gpu | meaning |`."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("| field | cpu | gpu | meaning |")
    rows: dict[str, tuple[object, object]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        field, cpu, gpu, _ = (cell.strip() for cell in line.strip("|").split("|", 3))
        name = field.strip("`")
        assert name not in rows, f"README names target field {name} twice"
        rows[name] = (_value(cpu), _value(gpu))
    return rows


def test_readme_names_every_target_field_with_its_defaults() -> None:
    table = readme_target_table()
    assert list(table) == list(FIELDS), "README's target fields differ from TargetProfile's (or their order)"
    for name, (cpu, gpu) in table.items():
        assert cpu == getattr(CPU_PROFILE, name), f"README: {name}'s cpu default {cpu}, the code's {getattr(CPU_PROFILE, name)}"
        assert gpu == getattr(GPU_PROFILE, name), f"README: {name}'s gpu default {gpu}, the code's {getattr(GPU_PROFILE, name)}"
