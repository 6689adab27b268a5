"""Every C function that an install or upgrade script in sql/ references is exported by the
library (with its pg_finfo_ record), so that every SQL version installs against it.
Usage: check_symbols.py LIBRARY.so SCRIPT.sql...   Prints one "ok"/"not ok" line per script."""
import re
import subprocess
import sys

lib, scripts = sys.argv[1], sys.argv[2:]
out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
# One CREATE FUNCTION ... AS 'MODULE_PATHNAME' statement; the body may not run into the next
# CREATE (a LANGUAGE sql function between two C functions has no symbol of its own).
fn = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([\w.]+)\s*\(((?:(?!CREATE\s).)*?)"
                r"AS\s+'MODULE_PATHNAME'(?:\s*,\s*'(\w+)')?", re.S | re.I)
for path in scripts:
    text = open(path).read()
    symbols = {(m.group(3) or m.group(1).split(".")[-1]) for m in fn.finditer(text)}
    missing = sorted(s for s in symbols if s not in exported or "pg_finfo_" + s not in exported)
    for s in missing:
        print(f"  {path}: C function {s} (or pg_finfo_{s}) not exported by {lib}")
    print(("not ok" if missing else "ok") +
          f" - {len(symbols)} C functions of {path} exported by the packaged library")
