"""What a run records about itself: the head of ``PREFIX.K.log`` and ``PREFIX.K.json``.

A log or JSON file must say how to reproduce it: the admixspec version, the
command line, the seed, the input and what the filters removed (fastmixture's
log, msprime's provenance). The command line writes these around the lines of
:meth:`admixspec.fit.admixture.AdmixtureResult.format_log`; a script can do the same.
"""

from __future__ import annotations

from .._version import __version__
from ..core.genotypes import Genotypes, filter_lines

__all__ = ["run_header", "run_record"]


def run_header(genotypes: Genotypes, *, command: str, seed, source, k_hint) -> list[str]:
    """The lines that open ``PREFIX.K.log``: version, command, seed, input, filters.

    Parameters
    ----------
    genotypes : Genotypes
        The filtered genotypes that were fitted.
    command : str
        The command line (or any description of the call).
    seed : int or None
        The seed given to the fit.
    source : str or os.PathLike
        The input file.
    k_hint : admixspec.spectral.estimate.KHint
        The spectral hint for K of these genotypes.

    Returns
    -------
    list of str
    """
    lines = [
        f"admixspec {__version__}",
        f"Command: {command}",
        f"Random seed: {seed}",
        f"Input: {source}",
        f"Size of G: {genotypes.n_individuals}x{genotypes.n_snps}",
    ]
    return lines + filter_lines(genotypes) + [f"Spectral K hint: {k_hint.describe()}"]


def run_record(result, genotypes: Genotypes, *, command: str, seed, source, k_hint,
               seconds: float, samples_selected: bool = False) -> dict:
    """The JSON record of one K: the fit's facts plus what reproduces them.

    Parameters
    ----------
    result : admixspec.fit.admixture.AdmixtureResult
    genotypes, command, seed, source, k_hint
        As in :func:`run_header`.
    seconds : float
        Wall time of this K.
    samples_selected : bool
        Whether the genotypes are some of the input's individuals (``--keep``,
        ``--mind``): then the record lists their IDs, in Q row order, which
        the input's own sample list no longer gives.

    Returns
    -------
    dict
        :meth:`~admixspec.fit.admixture.AdmixtureResult.record` and ``version``,
        ``command``, ``K``, ``seed``, ``input``, ``n_individuals``,
        ``n_snps``, ``seconds``, ``filters`` (the filter log), ``k_hint`` and,
        with ``samples_selected``, ``samples``.
    """
    record = result.record()
    record.update(
        version=__version__, command=command, K=result.K, seed=seed, input=str(source),
        n_individuals=genotypes.n_individuals, n_snps=genotypes.n_snps,
        seconds=seconds, filters=genotypes.filter_log, k_hint=k_hint.K,
    )
    if samples_selected:
        record["samples"] = genotypes.samples.tolist()
    return record
