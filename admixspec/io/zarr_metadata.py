"""Check a Zarr store's array metadata before Zarr decodes anything.

A Zarr array's metadata names the codecs that decode its chunks, and a store
is data that may come from anyone. The ``pickle`` codec unpickles chunks,
which runs any code the chunk holds; numcodecs refuses to since 0.15.2 /
0.16.6 / 0.17.1 (the ``zarr`` extra requires such a version), unless a
process opts in with ``NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE``. So that no
setting and no other codec of that kind can run code, and so that a store of
the wrong shape or type ends in one sentence rather than a traceback from
inside Zarr, :func:`check_arrays` reads the JSON metadata of the arrays
admixspec uses (Zarr v2's ``.zarray`` and consolidated ``.zmetadata``, v3's
``zarr.json`` and its consolidated metadata) and accepts only
integer or string data types, the dimensions the VCF Zarr layout gives them
(with one size per named dimension across arrays), and codecs on
:data:`SAFE_CODECS`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.exceptions import InputError

__all__ = ["SAFE_CODECS", "check_arrays", "present_arrays"]

#: Codecs that only decompress, reorder bytes or decode strings (v2 ids and v3
#: names; v3's ``numcodecs.`` prefix is stripped before the look-up).
SAFE_CODECS = frozenset({
    "blosc", "zstd", "lz4", "gzip", "zlib", "bz2", "lzma", "shuffle", "delta",
    "vlen-utf8", "vlen-bytes", "bytes", "endian", "transpose", "crc32c",
    "sharding_indexed",
})

_V2_INTEGER = re.compile(r"^[<>|=]?[iu][1248]$")
_V2_STRING = re.compile(r"^[<>|=]?[US]\d+$")
_V3_INTEGER = frozenset({f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)})
_V3_STRING = frozenset({"string", "variable_length_utf8", "fixed_length_utf32",
                        "null_terminated_bytes", "fixed_length_ascii", "bytes"})


def check_arrays(path, kinds: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    """Refuse a store whose arrays admixspec reads have an unsupported type or codec.

    Only metadata is read (as JSON, by this function); no chunk is opened.
    Arrays absent from the store are left to the caller to report.

    Parameters
    ----------
    path : str or os.PathLike
        The store's directory.
    kinds : dict
        Array name -> (``"integer"`` or ``"string"``, its dimensions' names,
        e.g. ``("variants", "samples", "ploidy")``).

    Raises
    ------
    InputError
        A metadata file that is not JSON, an array of another data type or
        number of dimensions, two arrays of different sizes along a dimension
        of the same name, or a codec not in :data:`SAFE_CODECS` (named).

    Examples
    --------
    >>> import json, os, tempfile
    >>> store = tempfile.mkdtemp(suffix=".vcz")
    >>> os.mkdir(os.path.join(store, "sample_id"))
    >>> meta = {"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "|O",
    ...         "filters": [{"id": "pickle"}], "compressor": None}
    >>> with open(os.path.join(store, "sample_id", ".zarray"), "w") as handle:
    ...     json.dump(meta, handle)
    >>> check_arrays(store, {"sample_id": ("string", ("samples",))})
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: ...: array sample_id: codec 'pickle' is not ...
    """
    path = Path(path)
    sizes: dict[str, tuple[int, str]] = {}
    for name, (kind, dims) in kinds.items():
        for where, meta in _metadata(path, name):
            shape = _check(path, f"array {name}", where, meta, kind, len(dims))
            for dim, size in zip(dims, shape, strict=True):
                first = sizes.setdefault(dim, (size, name))
                if first[0] != size:
                    raise InputError(
                        f"array {name} has {size} {dim} but array {first[1]} has "
                        f"{first[0]} ({where})", path=path)


def present_arrays(path, names) -> list[str]:
    """Which of ``names`` have array metadata in the store (read as JSON, no chunk).

    Examples
    --------
    >>> import tempfile
    >>> present_arrays(tempfile.mkdtemp(), ["call_genotype"])
    []
    """
    path = Path(path)
    return [name for name in names if _metadata(path, name)]


def _load(path: Path, file: Path):
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{file.relative_to(path)} is not valid JSON metadata "
                         f"({error})", path=path) from None


def _metadata(path: Path, name: str):
    """``(file, metadata)`` of array ``name`` from every place Zarr may read it."""
    found = []
    for file in (path / name / ".zarray", path / name / "zarr.json"):
        if file.is_file():
            found.append((file, _load(path, file)))
    consolidated = path / ".zmetadata"
    if consolidated.is_file():
        entries = _load(path, consolidated)
        entries = entries.get("metadata", {}) if isinstance(entries, dict) else {}
        if f"{name}/.zarray" in entries:
            found.append((consolidated, entries[f"{name}/.zarray"]))
    group = path / "zarr.json"
    if group.is_file():
        top = _load(path, group)
        inner = (top.get("consolidated_metadata") or {}) if isinstance(top, dict) else {}
        entries = inner.get("metadata", {}) if isinstance(inner, dict) else {}
        if name in entries:
            found.append((group, entries[name]))
    for file, meta in found:
        if not isinstance(meta, dict):
            raise InputError(f"{file.relative_to(path)}: array metadata is not a JSON "
                             "object", path=path)
    return [(file.relative_to(path), meta) for file, meta in found]


def _check(path: Path, label: str, where, meta: dict, kind: str, ndim: int) -> list:
    """The array's shape, once its type, codecs and number of dimensions are checked."""
    def fail(problem: str):
        raise InputError(f"{label}: {problem}", path=path)

    v3 = meta.get("zarr_format") == 3 or "data_type" in meta
    if v3:
        codecs = _v3_codec_names(meta.get("codecs"), fail)
    else:
        filters = meta.get("filters") or []
        if not isinstance(filters, list):
            fail(f"filters are not a list ({where})")
        codecs = [_codec_id(codec, fail) for codec in filters]
        if meta.get("compressor") is not None:
            codecs.append(_codec_id(meta["compressor"], fail))
    for codec in codecs:  # first: the codec is what could run code
        if codec not in SAFE_CODECS:
            fail(f"codec {codec!r} is not supported (admixspec reads "
                 f"{', '.join(sorted(SAFE_CODECS))})")
    if v3:
        dtype = meta.get("data_type")
        dtype = dtype.get("name") if isinstance(dtype, dict) else dtype
        ok = dtype in (_V3_INTEGER if kind == "integer" else _V3_STRING)
    else:
        dtype = meta.get("dtype")
        if not isinstance(dtype, str):
            ok = False
        elif kind == "integer":
            ok = bool(_V2_INTEGER.match(dtype))
        else:  # fixed-width, or objects decoded by a string codec
            ok = bool(_V2_STRING.match(dtype)) or (
                dtype.endswith("O") and codecs[:1] in (["vlen-utf8"], ["vlen-bytes"]))
    if not ok:
        fail(f"data type {dtype!r} is not {_article(kind)} type ({where})")
    shape = meta.get("shape")
    sizes = isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)
    if not sizes:
        fail(f"shape {shape!r} is not a list of sizes ({where})")
    if len(shape) != ndim:
        fail(f"has {len(shape)} dimensions, not {ndim} ({where})")
    return shape


def _article(kind: str) -> str:
    return "an integer" if kind == "integer" else "a string"


def _codec_id(codec, fail) -> str:
    if not (isinstance(codec, dict) and isinstance(codec.get("id"), str)):
        fail(f"codec {codec!r} has no id")
    return codec["id"]


def _v3_codec_names(codecs, fail) -> list[str]:
    """Names of a v3 codec list, sharding's inner codecs included."""
    if not isinstance(codecs, list):
        fail("codecs are not a list")
    names = []
    for codec in codecs:
        if isinstance(codec, str):
            codec = {"name": codec}
        if not (isinstance(codec, dict) and isinstance(codec.get("name"), str)):
            fail(f"codec {codec!r} has no name")
        names.append(codec["name"].removeprefix("numcodecs."))
        config = codec.get("configuration") or {}
        if codec["name"] == "sharding_indexed" and isinstance(config, dict):
            for inner in ("codecs", "index_codecs"):
                names.extend(_v3_codec_names(config.get(inner, []), fail))
    return names
