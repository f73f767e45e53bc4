"""Write a simulated data set (genotypes + truth) to disk."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..core.exceptions import UsageError
from .admixture import write_p, write_q
from .common import atomic_write, write_json
from .plink import write_plink
from .vcf import write_vcf

__all__ = ["write_labels", "write_simulation"]


def write_labels(path, samples, populations) -> None:
    """Write a ``sample_id<TAB>population`` table with a header, atomically.

    Parameters
    ----------
    path : str or os.PathLike
    samples, populations : sequence of str, same length
    """
    samples = np.asarray(samples, dtype=str)
    populations = np.asarray(populations, dtype=str)
    if samples.shape != populations.shape:
        raise UsageError("samples and populations must have the same length")
    with atomic_write(path) as handle:
        handle.write("sample_id\tpopulation\n")
        handle.writelines(f"{s}\t{p}\n"
                          for s, p in zip(samples, populations, strict=True))


def write_simulation(sim, prefix, *, vcf: bool = True, plink: bool = True) -> list[Path]:
    """Write a :class:`~admixspec.simulate.SimulatedData` under ``prefix``, as one set.

    Files:

    * ``prefix.vcf.gz`` + ``prefix.vcf.gz.tbi`` (REF = counted allele; the
      index needs the ``tabix`` program),
    * ``prefix.bed/.bim/.fam`` (``.bim`` column 6 = counted allele),
    * ``prefix.truth.Q`` (n_individuals x K) and ``prefix.truth.P``
      (n_snps x K) in ADMIXTURE format (6 decimals, clamped to
      [1e-5, 1 - 1e-5]),
    * ``prefix.labels.tsv`` (``sample_id``, ``population``),
    * ``prefix.params.json`` (simulator parameters, shapes, file names).

    All are written to a hidden folder beside them, then renamed into place:
    an error or interrupt part-way leaves none of the new files (and never a
    mix of this data set's files and those of an earlier one of that prefix).

    Parameters
    ----------
    sim : SimulatedData
    prefix : str or os.PathLike
        Output prefix; its folder is created if needed.
    vcf, plink : bool
        Whether to write each genotype format.

    Returns
    -------
    list of pathlib.Path
        Every file written.
    """
    prefix = Path(prefix)
    folder = prefix.parent if str(prefix.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.", suffix=".tmp",
                                        dir=folder))
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(folder)) from error
    try:
        staged = _write_files(sim, staging / prefix.name, vcf=vcf, plink=plink)
        written = _move_all(staged, folder)
    except OSError as error:  # name the file it was for, not the staging folder
        if error.filename is None or Path(error.filename).parent != staging:
            raise
        raise OSError(error.errno, error.strerror,
                      str(folder / Path(error.filename).name)) from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    index = folder / f"{prefix.name}.vcf.gz.tbi"
    if vcf and index.name not in {path.name for path in written}:
        index.unlink(missing_ok=True)  # no tabix: an earlier VCF's index is wrong
    return written


def _write_files(sim, prefix: Path, *, vcf: bool, plink: bool) -> list[Path]:
    """Write every file of :func:`write_simulation` under ``prefix``; their paths."""
    written: list[Path] = []
    if vcf:
        written += write_vcf(f"{prefix}.vcf.gz", sim.genotypes)
    if plink:
        written += write_plink(prefix, sim.genotypes)
    q_path, p_path = Path(f"{prefix}.truth.Q"), Path(f"{prefix}.truth.P")
    write_q(q_path, sim.Q)
    write_p(p_path, sim.P)
    labels = Path(f"{prefix}.labels.tsv")
    write_labels(labels, sim.genotypes.samples, sim.populations)
    params = Path(f"{prefix}.params.json")
    written += [q_path, p_path, labels, params]
    write_json(
        params,
        {
            "parameters": sim.parameters,
            "n_individuals": sim.genotypes.n_individuals,
            "n_snps": sim.genotypes.n_snps,
            "K": sim.Q.shape[1],
            "counted_allele": "VCF REF = .bim column 6 (A2); truth P is its frequency",
            "files": [p.name for p in written],
        },
    )
    return written


def _move_all(staged: list[Path], folder: Path) -> list[Path]:
    """Rename the staged files into ``folder``; on failure, remove those moved."""
    moved: list[Path] = []
    try:
        for path in staged:
            target = folder / path.name
            try:
                os.replace(path, target)
            except OSError as error:
                raise OSError(error.errno, error.strerror, str(target)) from error
            moved.append(target)
    except BaseException:
        for target in moved:
            target.unlink(missing_ok=True)
        raise
    return moved
