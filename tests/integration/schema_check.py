"""Checks mlw's JSON against the "Output schema" tables of docs/cli.md (test_conventions.sh).

Usage: schema_check.py DOCS_CLI_MD KIND FILE...   (KIND: run or target; each FILE holds one
object or a list of them). Prints one line per problem and exits 1 when there is any.
"""
import json
import re
import sys

TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def table(docs, title):
    """key -> (type text, meaning) of the table under "### title"."""
    text = open(docs, encoding="utf-8").read()
    section = text.split("### " + title + "\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def main():
    docs, kind, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = table(docs, {"run": "Run", "target": "Target"}[kind])
    problems = []
    objects = []
    for name in files:
        data = json.load(open(name, encoding="utf-8"))
        objects += [(name, o) for o in (data if isinstance(data, list) else [data])]
    if not objects:
        problems.append("no objects to check")
    for name, obj in objects:
        for key, value in obj.items():
            if key not in rows:
                problems.append(f"{name}: {key} is not in docs/cli.md's {kind} table")
                continue
            kinds = rows[key][0].split(" or ")
            ok = any(value is None if k == "null" else TYPES[k](value) for k in kinds)
            if not ok:
                problems.append(f"{name}: {key} = {value!r} is not {rows[key][0]}")
            if key in ("created", "started", "ended") and value is not None and not ISO.match(value):
                problems.append(f"{name}: {key} = {value!r} is not ISO 8601 UTC")
        for key, (_, meaning) in rows.items():
            optional = meaning.endswith(" only") or "only:" in meaning or kind == "target" and key not in (
                "name", "file", "type", "problem", "run_config")
            if not optional and key not in obj:
                problems.append(f"{name}: {key} is missing")
    for line in problems:
        print(line)
    sys.exit(1 if problems else 0)


main()
