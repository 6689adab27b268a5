#!/usr/bin/env python3
"""Instruction mix of the loops of the tile kernels, from `cuobjdump -sass` output.

  cuobjdump -sass build/cu_sdh.o | python3 sass_loops.py [--match SUBSTR] [--all]

For every function whose mangled name contains SUBSTR, lists its loops (a backward branch and
the instructions from its target to it), innermost first by size, with the opcode counts of each
loop body. The hot loop of a tile kernel is the one with the most FADD/FFMA; `pairs` is the
number of FSETP (pair count) or ATOMS/RED (SDH) in it, and instr/pair = loop size / pairs."""
import re
import sys
from collections import Counter

def parse(text):
    funcs = {}
    cur = None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur:
            addr = int(m.group(1), 16)
            ins = m.group(2).strip()
            funcs[cur].append((addr, ins))
    return funcs

def opcode(ins):
    ins = re.sub(r"^@!?U?P[T0-9]+\s+", "", ins)
    return ins.split()[0] if ins else ""

def loops(code):
    out = []
    for i, (addr, ins) in enumerate(code):
        op = opcode(ins)
        if op.startswith("BRA"):
            m = re.search(r"0x([0-9a-f]+)", ins.split("BRA", 1)[1])
            if m:
                tgt = int(m.group(1), 16)
                if tgt <= addr:
                    body = [c for c in code if tgt <= c[0] <= addr]
                    out.append((tgt, addr, body))
    return out

def main():
    match = ""
    show_all = "--all" in sys.argv
    if "--match" in sys.argv:
        match = sys.argv[sys.argv.index("--match") + 1]
    funcs = parse(sys.stdin.read())
    for name, code in funcs.items():
        if match and match not in name:
            continue
        ls = loops(code)
        if not ls:
            continue
        ls.sort(key=lambda l: -sum(1 for _, i in l[2] if opcode(i).startswith(("FADD", "FFMA", "FMUL"))))
        print(f"== {name}  ({len(code)} instructions)")
        for tgt, end, body in (ls if show_all else ls[:2]):
            cnt = Counter(opcode(i).split(".")[0] for _, i in body if opcode(i) != "NOP")
            n = sum(cnt.values())
            xadd = sum(1 for _, i in body if opcode(i).startswith("IADD3.X"))
            pairs = (cnt["ATOMS"] + cnt["RED"] + cnt["ATOM"] or cnt["FSETP"] or cnt["DSETP"]
                     or 2 * xadd)
            mix = " ".join(f"{k}:{v}" for k, v in cnt.most_common())
            ipp = f"{n / pairs:.2f}" if pairs else "-"
            print(f"  loop {tgt:#x}-{end:#x}: {n} instr, pairs~{pairs}, instr/pair {ipp}\n    {mix}")

main()
