"""Truncated and corrupted inputs end in one line naming the file, never a traceback.

Every input format the readers take (a PLINK 1 fileset, a PLINK 2 fileset,
VCF.gz and BCF, a VCF Zarr store) is written small, then copied and broken
in seeded random ways that make it invalid (a truncated file, a wrong magic
number, random bytes, a sidecar line that lost fields or lines, bytes that
are not UTF-8, a damaged or missing store chunk, store metadata that names a
codec admixspec refuses). ``admixspec info`` and ``admixspec run`` are
called in-process on each copy: exit status 1, one line on stderr that
starts ``admixspec: error: `` and names the input, and no traceback.

Only changes that no reader could take for valid data are made: a flipped
genotype byte in a ``.bed`` is a different genotype, not an error, so the
binary files are truncated or have their header or whole content replaced,
and compressed files are damaged where the compressed stream's own checks
(the deflate stream, the gzip CRC) see it.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from admixspec import InputError, simulate_balding_nichols
from admixspec.cli import main
from admixspec.io import write_plink, write_vcf

#: Seeded corruptions drawn per file (each is checked with `info` and `run`).
N_DRAWS = 3


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} not installed")
    return found


@pytest.fixture(scope="module")
def sources_fixture(tmp_path_factory) -> dict[str, Path]:
    """One small data set in every input format: name -> input path."""
    folder = tmp_path_factory.mktemp("fuzz_sources")
    genotypes = simulate_balding_nichols(24, 300, 2, missing_rate=0.02, seed=3).genotypes
    write_plink(folder / "plink", genotypes)
    write_vcf(folder / "vcf.vcf.gz", genotypes, index=False)
    return {"plink": folder / "plink.bed", "vcf": folder / "vcf.vcf.gz"}


def _pgen(sources, folder: Path) -> Path:
    plink2 = _tool("plink2")
    prefix = folder / "pgen"
    subprocess.run([plink2, "--bfile", str(sources["plink"].with_suffix("")),
                    "--make-pgen", "--out", str(prefix), "--threads", "1"],
                   check=True, capture_output=True)
    return prefix.with_suffix(".pgen")


def _bcf(sources, folder: Path) -> Path:
    bcftools = _tool("bcftools")
    path = folder / "bcf.bcf"
    subprocess.run([bcftools, "view", "-Ob", "-o", str(path), str(sources["vcf"])],
                   check=True, capture_output=True)
    return path


def _vcz(sources, folder: Path) -> Path:
    pytest.importorskip("zarr")
    program = Path(sys.executable).with_name("vcf2zarr")
    command = str(program) if program.exists() else _tool("vcf2zarr")
    path = folder / "store.vcz"
    subprocess.run([command, "convert", str(sources["vcf"]), str(path)], check=True,
                   capture_output=True)
    return path


@pytest.fixture(scope="module")
def all_sources_fixture(sources_fixture, tmp_path_factory) -> dict[str, Path]:
    folder = sources_fixture["plink"].parent
    return {**sources_fixture, "pgen": _pgen(sources_fixture, folder),
            "bcf": _bcf(sources_fixture, folder), "vcz": _vcz(sources_fixture, folder)}


# ------------------------------------------------------------------ corruptions


def truncated(data: bytes, rng) -> bytes:
    """The first 0 to len - 2 bytes: at least one byte of content is gone."""
    return data[: int(rng.integers(0, len(data) - 1))]


def bad_magic(data: bytes, rng) -> bytes:
    """The first two bytes replaced by two other bytes."""
    head = bytes((b + int(rng.integers(1, 256))) % 256 for b in data[:2])
    return head + data[2:]


def random_bytes(data: bytes, rng) -> bytes:
    """Random bytes, as many as the file had."""
    return rng.integers(0, 256, size=max(len(data), 1), dtype=np.uint8).tobytes()


def empty(data: bytes, rng) -> bytes:
    return b""


def damaged_deflate(data: bytes, rng) -> bytes:
    """Bytes of the first BGZF block's deflate stream changed.

    The block's header is 18 bytes and its CRC32 and size the last 8; a change
    inside the stream either breaks the stream or changes what it inflates to,
    which the CRC32 catches.
    """
    block_size = int.from_bytes(data[16:18], "little") + 1
    damaged = bytearray(data)
    for offset in rng.choice(np.arange(18, block_size - 8), size=8, replace=False):
        damaged[offset] ^= int(rng.integers(1, 256))
    return bytes(damaged)


def _lines(data: bytes) -> tuple[list[bytes], int]:
    """The file's lines and how many header lines (starting ``#``) lead them."""
    lines = data.splitlines(keepends=True)
    return lines, next(i for i, line in enumerate(lines) if not line.startswith(b"#"))


def lines_dropped(data: bytes, rng) -> bytes:
    """4 data lines up to all removed from the end: the counts no longer match.

    Not fewer: a ``.bed`` holds 4 genotypes a byte, so a ``.fam`` 1 to 3
    lines short can still agree with its size (no reader could tell).
    """
    lines, first = _lines(data)
    keep = int(rng.integers(first, len(lines) - 3))
    return b"".join(lines[:keep])


def fields_dropped(data: bytes, rng) -> bytes:
    """One data line cut short by 1 to 3 whitespace-separated fields."""
    lines, first = _lines(data)
    row = int(rng.integers(first, len(lines)))
    fields = lines[row].split()
    lines[row] = b"\t".join(fields[: len(fields) - int(rng.integers(1, 4))]) + b"\n"
    return b"".join(lines)


def not_utf8(data: bytes, rng) -> bytes:
    """A byte that cannot start a UTF-8 character put inside one data line."""
    lines, first = _lines(data)
    row = int(rng.integers(first, len(lines)))
    at = int(rng.integers(0, len(lines[row]) - 1))
    bad = bytes([int(rng.integers(0x80, 0xC0))])
    lines[row] = lines[row][:at] + bad + lines[row][at:]
    return b"".join(lines)


BINARY = (truncated, bad_magic, random_bytes, empty)
TEXT = (lines_dropped, fields_dropped, not_utf8, random_bytes, empty)

#: (input format, file suffix, corruptions)
CASES = [
    ("plink", ".bed", BINARY),
    ("plink", ".bim", TEXT),
    ("plink", ".fam", TEXT),
    ("pgen", ".pgen", BINARY),
    ("pgen", ".pvar", TEXT),
    ("pgen", ".psam", TEXT),
    ("vcf", ".vcf.gz", (*BINARY, damaged_deflate)),
    ("bcf", ".bcf", (*BINARY, damaged_deflate)),
]


def _copy(source: Path, folder: Path) -> Path:
    """A copy of ``source``'s fileset (or store) in ``folder``; the copy's input path."""
    if source.is_dir():
        shutil.copytree(source, folder / source.name)
    else:
        for path in source.parent.glob(source.name.split(".")[0] + ".*"):
            shutil.copy(path, folder / path.name)
    return folder / source.name


def assert_one_line_error(argv, capsys, names: str) -> None:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert code == 1, err
    assert len(lines) == 1, err
    assert lines[0].startswith("admixspec: error: "), err
    assert names in lines[0], err
    assert "Traceback" not in err


def check_both_commands(path: Path, folder: Path, capsys, names: str) -> None:
    assert_one_line_error(["info", path], capsys, names)
    assert_one_line_error(["run", path, "-K", "2", "--max-iter", "5",
                           "--out", folder / "out"], capsys, names)
    assert not list(folder.glob("out*")), "a failed run left output files"


@pytest.mark.parametrize(("kind", "suffix", "corruptions"), CASES,
                         ids=[f"{kind}{suffix}" for kind, suffix, _ in CASES])
def test_corrupt_file__one_line_error_naming_the_input(
        kind, suffix, corruptions, all_sources_fixture, tmp_path, capsys):
    source = all_sources_fixture[kind]
    rng = np.random.default_rng(list(map(ord, kind + suffix)))
    for corrupt in corruptions:
        for draw in range(N_DRAWS if corrupt not in (empty,) else 1):
            folder = tmp_path / f"{corrupt.__name__}{draw}"
            folder.mkdir()
            path = _copy(source, folder)
            target = path.with_name(path.name.split(".")[0] + suffix)
            target.write_bytes(corrupt(target.read_bytes(), rng))
            # the error names the input (for a fileset, its prefix: a .bim's
            # problem may show as the .bed's size disagreeing with it)
            check_both_commands(path, folder, capsys,
                                str(path.parent / path.name.split(".")[0]))


# ------------------------------------------------------------------ VCF Zarr


def _chunk_files(store: Path, array: str) -> list[Path]:
    return sorted(p for p in (store / array).rglob("*")
                  if p.is_file() and not p.name.startswith((".", "zarr.json")))


def _edit_metadata(store: Path, array: str, edit) -> None:
    path = store / array / ".zarray"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))
    consolidated = store / ".zmetadata"
    if consolidated.exists():
        whole = json.loads(consolidated.read_text())
        whole["metadata"][f"{array}/.zarray"] = meta
        consolidated.write_text(json.dumps(whole))


def _chunk_truncated(store, rng):
    chunk = rng.choice(_chunk_files(store, "call_genotype"))
    chunk.write_bytes(truncated(chunk.read_bytes(), rng))


def _chunk_random(store, rng):
    chunk = rng.choice(_chunk_files(store, "call_genotype"))
    chunk.write_bytes(random_bytes(chunk.read_bytes(), rng))


def _strings_random(store, rng):
    chunk = rng.choice(_chunk_files(store, rng.choice(["sample_id", "variant_allele"])))
    chunk.write_bytes(random_bytes(chunk.read_bytes(), rng))


def _metadata_truncated(store, rng):
    name = str(rng.choice(["call_genotype", "sample_id", "variant_position"]))
    path = store / name / ".zarray"
    path.write_bytes(truncated(path.read_bytes(), rng))
    if (store / ".zmetadata").exists():
        (store / ".zmetadata").unlink()


def _array_removed(store, rng):
    shutil.rmtree(store / str(rng.choice(["call_genotype", "sample_id", "contig_id",
                                          "variant_allele", "variant_position"])))
    if (store / ".zmetadata").exists():
        (store / ".zmetadata").unlink()


def _dtype_float(store, rng):
    name = str(rng.choice(["call_genotype", "variant_position", "variant_contig"]))
    _edit_metadata(store, name, lambda meta: meta.update(dtype="<f8"))


def _pickle_codec(store, rng):
    """sample_id as a pickled object array whose unpickling would write a file."""
    marker = store.parent / "unpickled"
    name = str(rng.choice(["sample_id", "variant_position"]))
    _edit_metadata(store, name, lambda meta: meta.update(
        filters=None, compressor={"id": "pickle", "protocol": 5}, chunks=meta["shape"]))
    for chunk in _chunk_files(store, name):
        chunk.unlink()
    (store / name / "0").write_bytes(pickle.dumps(_WritesAFile(marker), protocol=5))


class _WritesAFile:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


VCZ_CORRUPTIONS = [_chunk_truncated, _chunk_random, _strings_random, _metadata_truncated,
                   _array_removed, _dtype_float, _pickle_codec]


@pytest.mark.parametrize("corrupt", VCZ_CORRUPTIONS, ids=lambda f: f.__name__[1:])
def test_corrupt_vcz__one_line_error_naming_the_store(corrupt, all_sources_fixture,
                                                      tmp_path, capsys, monkeypatch):
    # as a user who opted in to unpickling elsewhere in the process would have
    # it: admixspec's own check must refuse the pickle codec, not numcodecs
    pickles = pytest.importorskip("numcodecs.pickles")
    monkeypatch.setattr(pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True, raising=False)
    rng = np.random.default_rng(list(map(ord, corrupt.__name__)))
    for draw in range(N_DRAWS):
        folder = tmp_path / str(draw)
        folder.mkdir()
        store = _copy(all_sources_fixture["vcz"], folder)
        corrupt(store, rng)
        check_both_commands(store, folder, capsys, str(store))
        assert not (folder / "unpickled").exists(), "a pickle in the store was loaded"


class TestZarrMetadata:
    """:func:`admixspec.io.zarr_metadata.check_arrays` on stores Zarr itself writes."""

    KINDS = {"calls": ("integer", ("variants", "samples", "ploidy")),
             "names": ("string", ("samples",))}

    @pytest.fixture
    def zarr_fixture(self):
        return pytest.importorskip("zarr")

    def _store(self, zarr, path, zarr_format, **options):
        group = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
        calls = group.create_array("calls", shape=(4, 3, 2), dtype="int8", **options)
        calls[:] = 1
        names = group.create_array("names", shape=(3,), dtype=str)
        names[:] = np.array(["a", "b", "c"])
        return path

    @pytest.mark.parametrize("zarr_format", [2, 3])
    def test_check_arrays__accepts_what_zarr_writes(self, zarr_fixture, tmp_path,
                                                    zarr_format):
        from admixspec.io.zarr_metadata import check_arrays

        check_arrays(self._store(zarr_fixture, tmp_path / "s.vcz", zarr_format),
                     self.KINDS)

    def test_check_arrays__accepts_a_sharded_v3_array(self, zarr_fixture, tmp_path):
        from admixspec.io.zarr_metadata import check_arrays

        store = self._store(zarr_fixture, tmp_path / "s.vcz", 3, chunks=(2, 3, 2),
                            shards=(4, 3, 2))
        assert "sharding_indexed" in (store / "calls" / "zarr.json").read_text()
        check_arrays(store, self.KINDS)

    def test_check_arrays__refuses_a_v3_pickle_codec_inside_a_shard(self, zarr_fixture,
                                                                   tmp_path):
        from admixspec.io.zarr_metadata import check_arrays

        store = self._store(zarr_fixture, tmp_path / "s.vcz", 3, chunks=(2, 3, 2),
                            shards=(4, 3, 2))
        meta_path = store / "calls" / "zarr.json"
        meta = json.loads(meta_path.read_text())
        meta["codecs"][0]["configuration"]["codecs"].append({"name": "numcodecs.pickle"})
        meta_path.write_text(json.dumps(meta))
        with pytest.raises(InputError, match="array calls: codec 'pickle' is not supp"):
            check_arrays(store, self.KINDS)

    def test_check_arrays__sizes_of_a_dimension_must_agree(self, zarr_fixture, tmp_path):
        from admixspec.io.zarr_metadata import check_arrays

        store = self._store(zarr_fixture, tmp_path / "s.vcz", 2)
        with pytest.raises(InputError, match="array names has 3 variants but array "
                                             "calls has 4"):
            check_arrays(store, {**self.KINDS, "names": ("string", ("variants",))})

    @pytest.mark.skipif(sys.version_info < (3, 11),
                        reason="no numcodecs release that refuses supports Python 3.10")
    def test_installed_numcodecs__refuses_to_unpickle(self):
        """The zarr extra asks for a numcodecs that refuses (0.15.2, 0.16.6, 0.17.1+)."""
        numcodecs = pytest.importorskip("numcodecs")
        from numcodecs.errors import UnsafeDecodeError

        codec = numcodecs.Pickle()
        with pytest.raises(UnsafeDecodeError):
            codec.decode(codec.encode(np.array(["a"], dtype=object)))


# ------------------------------------------------------------------ option files


#: (name, file, arguments after the input): files that options point at
OPTION_FILES = [
    ("keep", "keep.txt", ["info", "{bed}", "--keep", "{file}"]),
    ("pop", "plink.pop", ["run", "{bed}", "-K", "2", "--supervised", "--out", "{out}"]),
    ("project", "fixed.P", ["run", "{bed}", "-K", "2", "--project", "{file}",
                            "--out", "{out}"]),
]


@pytest.mark.parametrize(("name", "file", "argv"), OPTION_FILES,
                         ids=[name for name, _, _ in OPTION_FILES])
@pytest.mark.parametrize("corrupt", [random_bytes, not_utf8, empty],
                         ids=lambda f: f.__name__)
def test_corrupt_option_file__one_line_error_naming_it(name, file, argv, corrupt,
                                                       sources_fixture, tmp_path,
                                                       capsys):
    rng = np.random.default_rng(list(map(ord, name + corrupt.__name__)))
    bed = _copy(sources_fixture["plink"], tmp_path)
    path = tmp_path / file
    # a valid file of its kind, then broken (not_utf8 needs lines to break)
    valid = {"keep": "".join(f"{i} {i}\n" for i in range(3)),
             "pop": "".join("-\n" if i % 3 else "popA\n" for i in range(24)),
             "project": "".join("0.5 0.5\n" for _ in range(300))}[name]
    path.write_bytes(corrupt(valid.encode(), rng))
    arguments = [part.format(bed=bed, file=path, out=tmp_path / "out") for part in argv]
    # -q: a run logs what it read before it reaches the option's file
    assert_one_line_error([*arguments, "-q"], capsys, str(path))
    assert not list(tmp_path.glob("out*"))
