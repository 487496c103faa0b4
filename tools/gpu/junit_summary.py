"""The pass/fail counts of a pytest run, from its junit XML, as one JSON
object on stdout (tools/gpu/h200.sh writes it to conformance.json):

    {"tests": 412, "passed": 410, "failed": 1, "errors": 0, "skipped": 1,
     "seconds": 231.4, "exit_status": 1, "failed_tests": ["tests.conformance.test_kernels::test_x[gpu]"]}

`failed_tests` lists the failures and errors (junit's classname::name, at
most 100). Without the XML (pytest died before writing it),
`{"error": ..., "exit_status": ...}`. Standard library only.

    python3 tools/gpu/junit_summary.py conformance.xml [--exit-status N]
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

MAX_LISTED = 100


def summary(xml_path: Path, exit_status: int | None) -> dict[str, Any]:
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError) as e:
        return {"error": f"no junit XML: {e}", "exit_status": exit_status}
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return {
        "tests": counts["tests"],
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        "failed": counts["failures"],
        "errors": counts["errors"],
        "skipped": counts["skipped"],
        "seconds": round(sum(float(s.get("time", 0)) for s in suites), 1),
        "exit_status": exit_status,
        "failed_tests": failed[:MAX_LISTED],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="pass/fail counts of a pytest junit XML, as JSON")
    p.add_argument("xml", type=Path)
    p.add_argument("--exit-status", type=int, help="pytest's exit status, recorded as is")
    args = p.parse_args(argv)
    print(json.dumps(summary(args.xml, args.exit_status), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
