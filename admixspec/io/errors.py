"""What the format libraries raise on a bad file, as an :class:`InputError` naming it.

cyvcf2, bed-reader, pgenlib, pandas, Zarr and its codecs each fail on a
truncated or corrupted file in their own way (``RuntimeError`` from a
decompressor, ``ValueError`` from a parser, ``KeyError`` from a store, ``OSError``
without a file name). The readers check what they can and raise
:class:`InputError`; :func:`reading` wraps the calls into a format library
so that whatever those checks missed still ends as one sentence that names
the file, which the command line prints as one line.
"""

from __future__ import annotations

import contextlib
import zlib

import numpy as np

from ..core.exceptions import AdmixspecError, InputError

__all__ = ["FORMAT_NAMES", "LIBRARY_ERRORS", "check_complete_rows", "one_line",
           "reading"]

#: :func:`admixspec.io.detect_format`'s names, as :func:`reading` words them.
FORMAT_NAMES = {"plink": "a PLINK 1 fileset", "pgen": "a PLINK 2 fileset",
                "vcf": "VCF/BCF", "vcz": "a VCF Zarr store"}

#: What a format library raises on bytes it cannot decode. Not caught: the
#: errors that point at admixspec's own code (TypeError, AttributeError,
#: IndexError, ...) and MemoryError.
LIBRARY_ERRORS = (ValueError, RuntimeError, KeyError, EOFError, OSError, zlib.error)


def one_line(text) -> str:
    """``text`` with its lines joined by ``"; "`` (a parser's message may span lines).

    Examples
    --------
    >>> one_line("Error tokenizing data.\\nExpected 1 fields in line 2, saw 4\\n")
    'Error tokenizing data.; Expected 1 fields in line 2, saw 4'
    """
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


@contextlib.contextmanager
def reading(path, what: str):
    """Turn a format library's exception inside the block into :class:`InputError`.

    Parameters
    ----------
    path : str or os.PathLike
        The file (or store, or fileset prefix) being read; the message names it.
    what : str
        What it was read as, e.g. ``"a VCF Zarr store"``.

    Raises
    ------
    InputError
        ``<path>: cannot read as <what> (<exception type>: <its message>)``,
        chained to the library's exception (``admixspec --debug`` shows it).
        admixspec's own errors, and an ``OSError`` that names its file (the
        command line prints that name), pass unchanged.

    Examples
    --------
    >>> try:
    ...     with reading("x.vcz", "a VCF Zarr store"):
    ...         raise RuntimeError("error during blosc decompression: -1")
    ... except InputError as error:
    ...     print(error)
    x.vcz: cannot read as a VCF Zarr store (RuntimeError: error during blosc \
decompression: -1)
    """
    try:
        yield
    except AdmixspecError:
        raise
    except OSError as error:
        if error.filename is not None:
            raise
        raise InputError(f"cannot read as {what} ({_describe(error)})",
                         path=path) from error
    except LIBRARY_ERRORS as error:
        raise InputError(f"cannot read as {what} ({_describe(error)})",
                         path=path) from error


def _describe(error: BaseException) -> str:
    text = one_line(error.args[0] if isinstance(error, KeyError) and error.args
                    else error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def check_complete_rows(table, path, kind: str) -> None:
    """Refuse a whitespace-separated table with a record that lacks fields.

    pandas' C parser fills the missing trailing fields of a short line with
    ``""`` (read with ``na_filter=False``) instead of failing, so a ``.bim``
    line that lost its last allele would read as an indel.

    Parameters
    ----------
    table : pandas.DataFrame
        The file read as str columns with ``na_filter=False``.
    path : str or os.PathLike
    kind : str
        The file's kind for the message, e.g. ``".bim"``.

    Raises
    ------
    InputError
        ``<path>: record <n> of the <kind> file has <m> of its <k> fields``
        for the first such record (records count the file's data lines).

    Examples
    --------
    >>> import pandas as pd
    >>> check_complete_rows(pd.DataFrame({"a": ["1", "2"], "b": ["x", ""]}), "t.bim",
    ...                     ".bim")
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: t.bim: record 2 of the .bim file has 1 of its 2 ...
    """  # noqa: E501 - a doctest's exception line cannot be wrapped
    if table.empty:
        return
    blank = table.to_numpy(dtype=object) == ""
    rows = np.flatnonzero(blank.any(axis=1))
    if len(rows):
        row = int(rows[0])
        raise InputError(f"record {row + 1} of the {kind} file has "
                         f"{int((~blank[row]).sum())} of its {table.shape[1]} fields",
                         path=path)


def data_line(path, record: int, *, comments: bool = True) -> int:
    """The 1-based line number of data line ``record`` (0-based) of ``path``.

    pandas skips blank lines, and a ``.psam``'s header and ``##`` lines are not
    records, so a table's row index is not the line number. Only called on
    the way to an error: it reads the file again.

    Parameters
    ----------
    path : str or os.PathLike
    record : int
        0-based index of the record among the data lines: those not blank
        (and, with ``comments``, not starting with ``#``).
    comments : bool
        Whether lines starting with ``#`` are headers (a ``.psam``) rather
        than records (a ``.bim`` or ``.fam``, read without a comment rule).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.psam"
    >>> _ = p.write_text("#IID\\na\\n\\nb\\n")
    >>> data_line(p, 1), data_line(p, 1, comments=False)
    (4, 2)
    """
    with open(path, "rb") as handle:
        data_lines = (number for number, line in enumerate(handle, 1)
                      if line.strip() and not (comments and line.startswith(b"#")))
        for index, number in enumerate(data_lines):
            if index == record:
                return number
    return record + 1
