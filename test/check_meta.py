"""Validates META.json against test/pgxn-meta-1.0.0.schema.json and against the repository:
the provided file exists, versions agree with gpu2bs.control. One "ok"/"not ok" line per check."""
import json
import pathlib
import re
import sys

import jsonschema

top = pathlib.Path(__file__).resolve().parent.parent
meta = json.loads((top / "META.json").read_text())
schema = json.loads((top / "test" / "pgxn-meta-1.0.0.schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(meta), key=lambda e: list(e.path))
for e in errors:
    print(f"  META.json {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
print(("ok" if not errors else "not ok") + " - META.json is valid PGXN Meta Spec 1.0.0")

control = (top / "gpu2bs.control").read_text()
default = re.search(r"default_version\s*=\s*'([^']+)'", control).group(1)
ext = meta.get("provides", {}).get("gpu2bs", {})
problems = []
if not (top / ext.get("file", "-")).is_file():
    problems.append(f"provides.gpu2bs.file {ext.get('file')} does not exist")
if ext.get("file") != f"sql/gpu2bs--{default}.sql":
    problems.append(f"provides.gpu2bs.file is not the install script of default_version {default}")
for v in (meta.get("version", ""), ext.get("version", "")):
    if not v.startswith(default + ".") and v != default:
        problems.append(f"version {v} does not match default_version {default}")
for p in problems:
    print("  " + p)
print(("ok" if not problems else "not ok") + f" - META.json agrees with gpu2bs.control (version {default})")
sys.exit(0)
