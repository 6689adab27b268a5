#!/usr/bin/env python3
"""Summary tables of a bench_sliding output (markdown rows on stdin or in the file given):
in place vs CUB out of place per case (GB/s, fraction of the copy of the same run, ratio, bold
where in place >= CUB), the cases met, and the other tile-flag orderings against the default.

    python3 test/bench/sliding_table.py bench.txt [suffix]
suffix: a row-name suffix to take as "in place" instead of the tuned rows ("loadflags",
"release", "relaxed").
"""
import re
import sys


# Rows of the output keyed by (method, n, size, pct): GB/s.
def parse(lines):
    rows = {}
    for line in lines:
        m = re.match(r"\|\s*(.+?)\s*\|\s*(\d+)M\s*\|\s*(\d+) B\s*\|\s*(\d+) %\s*\|\s*[\d.]+\s*\|"
                     r"\s*([\d.]+)\s*\|", line)
        if m:
            rows[(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))] = float(
                m.group(5))
    return rows


# The in-place vs CUB table and the list of cases not met, for the rows named prim + suffix.
def table(rows, suffix=""):
    out = ["| n | size | sel | copy GB/s | select | cub If | select/cub | unique | cub Unique |"
           " unique/cub | partition | cub Partition | partition/cub |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    met, total, missed = 0, 0, []
    for n in sorted({k[1] for k in rows}):
        for size in (4, 8, 16):
            for pct in (10, 50, 90):
                copy = rows.get(("copy D2D", n, size, pct))
                if copy is None:
                    continue
                cells = [f"{n}M", f"{size} B", f"{pct} %", f"{copy:.0f}"]
                for prim, cub in (("select", "cub If"), ("unique", "cub Unique"),
                                  ("partition", "cub Partition")):
                    ours = rows.get((prim + (" " + suffix if suffix else ""), n, size, pct))
                    theirs = rows.get((cub, n, size, pct))
                    if ours is None or theirs is None:
                        cells += ["-", "-", "-"]
                        continue
                    r = ours / theirs
                    total += 1
                    if r >= 1.0:
                        met += 1
                    else:
                        missed.append(f"{prim} {n}M {size} B {pct} % {r:.3f}")
                    cells += [f"{ours:.0f} ({ours / copy:.2f})",
                              f"{theirs:.0f} ({theirs / copy:.2f})",
                              f"**{r:.2f}**" if r >= 1.0 else f"{r:.2f}"]
                out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append(f"met: {met} of {total}")
    out.append("")
    out.append("not met: " + "; ".join(missed))
    return "\n".join(out)


# Ratios of the other orderings' rows to the default rows, per primitive and size.
def orders(rows):
    out = ["| size | ordering | select | unique | partition |", "|---|---|---|---|---|"]
    for size in (4, 8, 16):
        for suffix in ("loadflags", "release", "relaxed"):
            cells = [f"{size} B", suffix]
            for prim in ("select", "unique", "partition"):
                rs = sorted(rows[(prim + " " + suffix, n, s, p)] / rows[(prim, n, s, p)]
                            for (m, n, s, p) in rows
                            if m == prim and s == size and (prim + " " + suffix, n, s, p) in rows)
                cells.append(f"{rs[0]:.2f}-{rs[-1]:.2f} ({rs[len(rs) // 2]:.2f})" if rs else "-")
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    rows = parse(src)
    suffix = sys.argv[2] if len(sys.argv) > 2 else ""
    print(table(rows, suffix))
    if not suffix:
        print()
        print("ordering / tuned (GB/s ratio), per size over the cases: min-max (median)")
        print(orders(rows))
