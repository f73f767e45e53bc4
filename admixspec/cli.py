"""The ``admixspec`` command line.

Layout (msprime/tskit style): :func:`get_parser` builds one subparser per
subcommand, each registered by an ``_add_<name>_parser(subparsers)`` function
and dispatching through ``set_defaults(runner=run_<name>)``; a runner turns
the parsed arguments into library calls and writes the results. Only
:func:`main` catches errors: :class:`~admixspec.core.exceptions.InputError` and
``OSError`` become one line ``admixspec: error: <file>: <problem>`` on stderr
and exit code 1; usage errors (bad flags, or a
:class:`~admixspec.core.exceptions.UsageError` from the library) exit with code 2.
``--debug`` shows the traceback instead. Python warnings (e.g.
:class:`~admixspec.core.exceptions.ConvergenceWarning`) print as one line
``admixspec: <Category>: <message>`` through logging. Each K's output files
are written whole or not at all.

Helpers for subcommands that read genotypes:

* :func:`add_genotype_arguments` adds ``INPUT`` and ``--keep``, ``--region``,
  ``--maf``, ``--geno``, ``--mind``;
* :func:`read_genotypes_from_args` reads and filters them into a
  :class:`~admixspec.core.genotypes.Genotypes` (logging what each filter removed).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import math
import os
import re
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path

from ._version import __version__
from .core.exceptions import AdmixspecError, InputError, UsageError
from .core.validation import Interval

__all__ = [
    "add_genotype_arguments",
    "command_line",
    "get_parser",
    "main",
    "parse_arguments",
    "read_genotypes_from_args",
]

logger = logging.getLogger("admixspec")


# --------------------------------------------------------------------------- parsing


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line: ``<prog>: error: <message>``."""

    #: Whether positionals may follow options: ``run x.bed -j4 3`` (ADMIXTURE
    #: reads K wherever it is), refused as "unrecognized arguments: 3" by
    #: argparse's plain parse, which takes every positional at the first one.
    intermixed = False
    _intermixing = False

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(self, args=None, namespace=None):
        # argparse's intermixed parse calls this method again, for its passes
        if not self.intermixed or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


# argparse types: the library's own argument rules (core.validation), as parsers
_positive_int = Interval(int, 1).parse
_non_negative_int = Interval(int, 0).parse
# finite: "inf" parses as a float, and -C inf stopped the fit after one iteration
_positive_float = Interval(float, 0, closed="neither", finite=True).parse
# CV folds, bootstrap replicates, a reference: one of them says nothing
_at_least_2 = Interval(int, 2).parse


def _fraction(upper: float):
    return Interval(float, 0, upper).parse


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default, unless it is None (as docs/cli.md does).

    None means "not given", which the help says in words where it matters:
    argparse's own formatter ended ``--ids``'s "default: the input that
    PREFIX.K.json records, ..." with "(default: None)".
    """

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _common_options() -> argparse.ArgumentParser:
    """Options every subcommand accepts (a parent parser)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("general options")
    group.add_argument(
        "--debug", action="store_true",
        help="show debug messages, and a full traceback on errors",
    )
    group.add_argument(
        "-q", "--quiet", action="store_true", help="only print warnings and errors"
    )
    return common


def _add_subcommand(subparsers, name: str, *, help: str, description: str | None = None):
    """Create a subparser with the common options; returns it."""
    return subparsers.add_parser(
        name,
        help=help,
        description=description or help,
        parents=[_common_options()],
        formatter_class=_HelpFormatter,
    )


def add_genotype_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the genotype input and its reader/filter flags to ``parser``.

    Adds the positional ``input`` and ``--keep``, ``--region``, ``--maf``,
    ``--geno``, ``--mind``, ``--indep-pairwise``; read them back with
    :func:`read_genotypes_from_args`.
    """
    parser.add_argument(
        "input",
        help="genotypes: VCF, VCF.gz or BCF, a PLINK .bed or a PLINK 2 .pgen (or "
        "their prefix)",
    )
    group = parser.add_argument_group("input selection and filters")
    group.add_argument(
        "--keep", metavar="FILE",
        help="keep only these samples: one ID per line, or PLINK 'FID IID' lines "
        "(a .fam or .psam with FIDs is then matched on both, as by PLINK)",
    )
    group.add_argument(
        "--region", metavar="CHR:START-END",
        help="only variants in this region (1-based, inclusive; VCF/BCF need a "
        ".tbi/.csi index)",
    )
    group.add_argument(
        "--maf", type=_fraction(0.5), default=0.0,
        help="remove SNPs with minor allele frequency below this (every call counts "
        "two alleles, a male's chromosome X call too, as ADMIXTURE's model has it; "
        "plink --maf counts it once, so on X the SNPs kept may differ a little)",
    )
    group.add_argument(
        "--geno", type=_fraction(1.0), default=1.0,
        help="remove SNPs with a missing-call fraction above this",
    )
    group.add_argument(
        "--mind", type=_fraction(1.0), default=1.0,
        help="remove individuals with a missing-call fraction above this",
    )
    group.add_argument(
        "--indep-pairwise", nargs=3, metavar=("WINDOW", "STEP", "R2"),
        help="LD pruning after the other filters, as PLINK's: in windows of WINDOW "
        "SNPs moved STEP SNPs at a time, drop one SNP of each pair with r^2 > R2 "
        "(needs the 'allel' extra; a window in kb is not supported)",
    )


def read_genotypes_from_args(args: argparse.Namespace, *, check: bool = True,
                             stream: bool = False, in_memory_for=(),
                             drop_monomorphic: bool = True):
    """Read and filter the genotypes named by :func:`add_genotype_arguments` flags.

    One call of :func:`admixspec.io.reader.open_genotypes`, which logs (INFO)
    the size read and what every filter removed. With ``stream``, genotypes
    over half of ``--memory`` stay on disk (``run``); ``in_memory_for`` names
    the flags that need them in memory. ``drop_monomorphic=False`` keeps SNPs
    with one observed allele (``run``: P has a row for each). ``-j``, where
    the subcommand has it, is also the PLINK reader's thread count.

    Returns
    -------
    Genotypes or admixspec.io.streamed.StreamedGenotypes
    """
    from .io.reader import open_genotypes

    return open_genotypes(
        args.input, memory_mib=getattr(args, "memory", None), stream=stream,
        in_memory_for=in_memory_for, keep=args.keep, region=args.region, maf=args.maf,
        geno=args.geno, mind=args.mind, indep_pairwise=args.indep_pairwise,
        drop_monomorphic=drop_monomorphic, check=check,
        num_threads=getattr(args, "threads", None),
    )


def command_line(argv=None) -> str:
    """The command line as one shell-quoted string (for logs and provenance)."""
    words = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["admixspec", *map(str, words)])


# --------------------------------------------------------------------------- simulate


def _add_simulate_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "simulate",
        help="simulate admixed genotypes with known Q and P",
        description=(
            "Simulate the seed paper's genetic admixture experiment with msprime "
            "(K populations split T generations ago; admixed genomes are mosaics of "
            "exponential blocks copied from ancestral haplotypes chosen by "
            "Dirichlet(alpha) proportions), or a fast Balding-Nichols model. Writes "
            "PREFIX.vcf.gz (+.tbi), PREFIX.bed/.bim/.fam, the true PREFIX.truth.Q "
            "(realised ancestry fractions) and PREFIX.truth.P, PREFIX.labels.tsv and "
            "PREFIX.params.json."
        ),
    )
    # the defaults are simulate_admixture's (tests/test_cli.py checks them), written
    # here so that parsing does not import numpy
    parser.add_argument("--out", required=True, metavar="PREFIX", help="output prefix")
    parser.add_argument(
        "--model", choices=["msprime", "balding-nichols"], default="msprime",
        help="coalescent admixture simulation, or numpy-only Balding-Nichols",
    )
    parser.add_argument(
        "-K", type=_positive_int, default=3, help="number of ancestral populations"
    )
    parser.add_argument(
        "-m", "--n-admixed", type=_positive_int, default=50,
        help="number of admixed individuals",
    )
    parser.add_argument(
        "--alpha", type=_positive_float, default=1.0,
        help="symmetric Dirichlet parameter of the proportions",
    )
    parser.add_argument("--seed", type=_non_negative_int, default=1, help="random seed")
    parser.add_argument(
        "--n-snps", type=_positive_int, default=None,
        help="number of SNPs (msprime: random subset of the simulated SNPs, default "
        "all; balding-nichols: default 10000)",
    )
    coalescent = parser.add_argument_group("msprime model (the paper's values)")
    coalescent.add_argument(
        "--n-haplotypes", type=_positive_int, default=40,
        help="chromosomes sampled per ancestral population",
    )
    coalescent.add_argument(
        "--split-time", type=_positive_float, default=4000.0,
        help="generations since the populations split",
    )
    coalescent.add_argument(
        "--ne", type=_positive_float, default=1e4, help="effective population size"
    )
    coalescent.add_argument(
        "--mutation-rate", type=_positive_float, default=1e-8,
        help="per bp per generation",
    )
    coalescent.add_argument(
        "--recombination-rate", type=_positive_float, default=1e-8,
        help="per bp per generation",
    )
    coalescent.add_argument(
        "--length", type=_positive_float, default=25e6,
        help="chromosome length in bp (the paper used 250e6, which msprime needs "
        "well over 2 minutes for; see the docs of simulate_admixture)",
    )
    coalescent.add_argument(
        "--block-rate", type=_positive_float, default=20.0,
        help="rate of the exponential mosaic block lengths, per Morgan",
    )
    coalescent.add_argument(
        "--bp-per-morgan", type=_positive_float, default=1e8,
        help="base pairs per Morgan",
    )
    bn = parser.add_argument_group("balding-nichols model")
    bn.add_argument(
        "--fst", type=Interval(float, 0, 1, closed="neither").parse, default=0.1,
        help="Balding-Nichols F_ST in (0, 1)",
    )
    parser.set_defaults(runner=run_simulate)


#: simulate's flags that one --model reads and the other ignores: flag -> the
#: simulator's argument
_MODEL_FLAGS = {
    "msprime": {"n_haplotypes": "n_haplotypes", "split_time": "split_time",
                "ne": "population_size", "mutation_rate": "mutation_rate",
                "recombination_rate": "recombination_rate", "length": "sequence_length",
                "block_rate": "block_rate", "bp_per_morgan": "bp_per_morgan"},
    "balding-nichols": {"fst": "fst"},
}


def _check_model_flags(args: argparse.Namespace, simulators: dict) -> None:
    """Refuse flags of the other --model set off their defaults (silently unused)."""
    import inspect

    for model, flags in _MODEL_FLAGS.items():
        if model == args.model:
            continue
        defaults = inspect.signature(simulators[model]).parameters
        given = [f"--{flag.replace('_', '-')}" for flag, name in flags.items()
                 if getattr(args, flag) != defaults[name].default]
        if given:
            raise UsageError(f"{', '.join(given)} (--model {model} only) would be "
                             f"ignored by --model {args.model}: add --model {model}, "
                             "or leave them out")


def run_simulate(args: argparse.Namespace) -> int:
    """Simulate and write the data set and its truth."""
    from .io import write_simulation
    from .simulate import simulate_admixture, simulate_balding_nichols

    _check_prefix(args.out)
    _check_output_folder(args.out)
    _check_model_flags(args, {"msprime": simulate_admixture,
                              "balding-nichols": simulate_balding_nichols})
    # the flags of the chosen model, by the simulator's argument names
    model = {name: getattr(args, flag)
             for flag, name in _MODEL_FLAGS[args.model].items()}
    start = time.perf_counter()
    if args.model == "msprime":
        sim = simulate_admixture(args.n_admixed, args.K, alpha=args.alpha,
                                 n_snps=args.n_snps, seed=args.seed, **model)
    else:
        sim = simulate_balding_nichols(args.n_admixed, args.n_snps or 10_000, args.K,
                                       alpha=args.alpha, seed=args.seed, **model)
    logger.info(
        "simulated %d individuals x %d SNPs, K=%d in %.1f s",
        sim.genotypes.n_individuals, sim.genotypes.n_snps, sim.Q.shape[1],
        time.perf_counter() - start,
    )
    sim.parameters["command_line"] = command_line(args._argv)
    sim.parameters["admixspec_version"] = __version__
    written = write_simulation(sim, args.out)
    logger.info("wrote %s", ", ".join(str(p) for p in written))
    return 0


# --------------------------------------------------------------------------- info


def _add_info_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "info",
        help="summarise a genotype file: sizes, filters, missingness, ploidy",
        description=(
            "Read a VCF/BCF or PLINK input as 'admixspec run' would, and report the "
            "individuals, the variants read, kept and removed (by reason), the "
            "missingness, the ploidy handling and a spectral hint for K (the "
            "largest eigenvalue gap of the denoised second moment, computed on "
            "at most 20,000 random SNPs). Exits 1 when fewer than 2 "
            "individuals or 2 SNPs remain."
        ),
    )
    add_genotype_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(runner=run_info)


def run_info(args: argparse.Namespace) -> int:
    """Print the summary of one input: :func:`admixspec.genotype_summary`."""
    from .fit.summary import genotype_summary, summary_lines

    summary = genotype_summary(read_genotypes_from_args(args), with_k_hint=True, seed=0)
    print(json.dumps(summary, indent=2) if args.json
          else "\n".join(summary_lines(summary)))
    return 0


# --------------------------------------------------------------------------- run


def _default_prefix(path: str) -> str:
    """ADMIXTURE names outputs after the input's basename, in the working directory."""
    name = Path(path).name
    for suffix in (".vcf.gz", ".vcf.bgz", ".vcf", ".bcf", ".bed", ".bim", ".fam",
                   ".pgen", ".pvar", ".psam", ".vcz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _add_device_argument(group) -> None:
    group.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="auto",
        help="where the maximum-likelihood passes run: 'auto' (a usable CUDA GPU, else "
        "the CPU; the log says which), 'cpu', or 'cuda' (an error without a GPU); "
        "a GPU needs admixspec[gpu]",
    )


def _add_model_arguments(parser) -> None:
    """``run``'s model group: K, output prefix, seed, threads, device, memory."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "-K", "--K", dest="K", type=_k_list, nargs="+", action="extend", metavar="K",
        help="number(s) of ancestral populations: '-K 3', '-K 2 3 4' or '-K 2-6' "
        "(or after the input, as ADMIXTURE takes it)",
    )
    group.add_argument(
        "--out", metavar="PREFIX",
        help="output prefix (default: the input's basename, in the working directory)",
    )
    group.add_argument("-s", "--seed", type=_non_negative_int, default=43,
                       help="random seed (ADMIXTURE's default is 43)")
    group.add_argument("-j", "--threads", type=_positive_int, default=None,
                       help="threads for the whole run: reading a .bed, the numba "
                            "kernels and NumPy's and SciPy's BLAS (default: all cores; "
                            "more than numba runs, NUMBA_NUM_THREADS, are lowered to "
                            "them with a warning)")
    _add_device_argument(group)
    _add_memory_argument(group)


def _add_run_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "run",
        help=("estimate ancestry (Q) and ancestral allele frequencies (P) for one or "
              "more K"),
        description=(
            "Estimate ancestry proportions Q and ancestral allele frequencies P with "
            "the spectral tensor-eigenpair method, refined by maximum likelihood where "
            "that is identifiable. Writes PREFIX.K.Q, PREFIX.K.P (one row per SNP that "
            "passed the filters, monomorphic ones included, as ADMIXTURE), "
            "PREFIX.K.P.snps (which SNP each P row is), PREFIX.K.log and "
            "PREFIX.K.json for every K (ADMIXTURE's formats); with --runs, also "
            "PREFIX.K.modes.tsv and PREFIX.K.mode<M>.Q."
        ),
    )
    add_genotype_arguments(parser)
    parser.add_argument(
        "K_after_input", nargs="*", type=_k_after_input, metavar="K",
        help="ADMIXTURE's place for K: 'admixspec run data.bed 3' is 'admixspec run "
        "data.bed -K 3'",
    ).required = False  # or -K: 'run -K 3' asks for the input alone
    _add_model_arguments(parser)
    method = parser.add_argument_group("estimator")
    method.add_argument(
        "--init", choices=("spectral", "svd", "random"), default="spectral",
        help="'spectral': the tensor-eigenpair estimate (refined per --refine); "
        "'svd' or 'random': plain maximum likelihood from that start",
    )
    refine = method.add_mutually_exclusive_group()
    refine.add_argument(
        "--refine", dest="refine", action="store_const", const=True, default="auto",
        help="always maximise the likelihood from the spectral estimate "
        "(default: only when every component has a near-unadmixed individual)",
    )
    refine.add_argument(
        "--no-refine", dest="refine", action="store_const", const=False,
        help="report the pure spectral estimate (P by maximum likelihood given Q)",
    )
    method.add_argument("-C", "--tol", type=_positive_float, default=1e-4,
                        help="stop the ML fit when an iteration gains less "
                             "log-likelihood than this")
    method.add_argument("--max-iter", type=_positive_int, default=1000,
                        help="ML iteration limit")
    method.add_argument(
        "--runs", type=_positive_int, default=1, metavar="N",
        help="N fits per K: the default path (or --init's start), then maximum "
        "likelihood from random starts seeded --seed + 1, + 2, ...; writes the best "
        "log-likelihood's (the earliest within 1e-6; the default's own where it "
        "kept the spectral estimate) and groups the runs "
        "into modes (CLUMPP G' >= 0.97 between every two runs): "
        "PREFIX.K.modes.tsv and each other mode's PREFIX.K.mode<M>.Q",
    )
    extra = parser.add_argument_group(
        "cross-validation, bootstrap, supervised, projection")
    extra.add_argument(
        "--cv", type=_at_least_2, nargs="?", const=5, default=None, metavar="N",
        help="N-fold cross-validation over genotype entries (N >= 2, at most the "
        "observed entries; defaults to 5); the best K is reported",
    )
    extra.add_argument(
        "-B", "--bootstrap", dest="bootstrap", type=_at_least_2, nargs="?", const=200,
        default=None, metavar="N",
        help="N >= 2 bootstrap replicates over blocks of SNPs (default 200): writes "
        "PREFIX.K.Q_se and PREFIX.K.Q_bias",
    )
    extra.add_argument(
        "--supervised", nargs="?", const="", default=None, metavar="POPFILE",
        help="supervised mode with reference labels from POPFILE (default: the input's "
        "prefix + '.pop'; one line per individual, '-' for unknown)",
    )
    _add_projection_arguments(extra)
    parser.intermixed = True  # K after options: 'run x.bed -B4 3'
    parser.set_defaults(runner=run_fit, usage_error=parser.error)


def _one_k_list(args: argparse.Namespace) -> None:
    """``run``'s K from ``-K`` or from after the input (ADMIXTURE's place), not both."""
    after_input = args.K_after_input
    if after_input and args.K:
        args.usage_error(f"K is given twice: {' '.join(_k_text(after_input))} after the "
                         f"input and -K {' '.join(_k_text(args.K))}; give one")
    if not after_input and not args.K:
        args.usage_error("the following arguments are required: K (after the input, "
                         "as ADMIXTURE takes it, or -K)"
                         + _count_took_k(getattr(args, "_argv", [])))
    args.K = args.K or after_input


def _count_took_k(words) -> str:
    """Why K is missing when ``--cv 3`` or ``-B 3`` took it as their count.

    ADMIXTURE attaches their values (``--cv=10``, ``-B2000``): to it,
    ``admixture data.bed --cv 3`` means K = 3; argparse gives the 3 to ``--cv``.
    """
    for flag, value in zip(words, words[1:], strict=False):
        if flag in _OPTIONAL_COUNTS and _is_integer(value):
            what = "folds" if flag == "--cv" else "replicates"
            attached = f"-B{value}" if flag == "-B" else f"{flag}={value}"
            return (f"; '{flag} {value}' read {value} as the number of {what} "
                    f"({attached} says so); give K after the input")
    return ""


def _k_text(k_lists) -> list[str]:
    return [",".join(map(str, values)) for values in k_lists]


def _add_projection_arguments(group) -> None:
    """``--project`` and its SNP matching and correction; ``--reference-size``."""
    group.add_argument(
        "--project", metavar="PFILE",
        help="projection mode: keep a reference's allele frequencies fixed and estimate "
        "each individual's Q by maximum likelihood. With the reference run's "
        "PFILE.snps beside it, SNPs are matched by chromosome, position and alleles "
        "(ID as a fallback) and P is flipped where the input counts the other allele; "
        "a bare .P file must have the input's SNPs in order",
    )
    group.add_argument(
        "--plain-projection", dest="projection_correction", action="store_const",
        const=False, default="auto",
        help="project as ADMIXTURE does, without correcting Q for the sampling noise "
        "of the reference's P (by default corrected when the reference has fewer "
        "than 5000 individuals: the reference run's PREFIX.K.Q beside PFILE, or "
        "--reference-size; the input's individuals that PFILE was fitted on, matched "
        "by IID, get the plain projection)",
    )
    group.add_argument(
        "--keep-ambiguous", action="store_true",
        help="--project: keep strand-ambiguous A/T and C/G SNPs (matched as given, "
        "never complemented); by default they are dropped",
    )
    group.add_argument(
        "--min-overlap", type=_fraction(1.0), default=None, metavar="FRACTION",
        help="--project: least share of the reference's SNPs that must match the "
        "input's (default: 0.5; and at least one SNP)",
    )
    group.add_argument(
        "--reference-size", type=_at_least_2, default=None, metavar="N",
        help="fit Q and P on N >= 2 individuals drawn at random (seeded by --seed; "
        "their IDs go to PREFIX.K.ref), then project every other individual onto that "
        "P, in chunks (default: everyone, unless the spectral stage runs on more than "
        "5000 individuals: it then runs on 5000, whose moments are N x N, and a "
        "maximum-likelihood estimate is refitted on everyone, except when streamed "
        "from disk on the CPU)",
    )


def _projection_input(args, genotypes):
    """``--project``: the fixed P and the genotypes on the SNPs it matches."""
    from .fit.pipeline import CORRECTION_MAX_REFERENCE, correct_projection
    from .io.snps import MIN_OVERLAP, projection_reference

    reference = projection_reference(
        args.project, genotypes, ambiguous=args.keep_ambiguous,
        min_overlap=MIN_OVERLAP if args.min_overlap is None else args.min_overlap,
        reference_q=args.projection_correction is not False)
    n_reference = None if reference.reference_q is None else len(reference.reference_q)
    if n_reference and not correct_projection(args.projection_correction, n_reference):
        reference.lines.append(
            f"Projection: not corrected for the sampling noise of P: its reference has "
            f"{n_reference} individuals, at least {CORRECTION_MAX_REFERENCE}, and P is "
            "taken as exact")
    for line in reference.lines:
        logger.info("%s", line)
    if reference.columns is not None:
        genotypes = genotypes.subset(snps=reference.columns)
    return genotypes, reference


def _check_projection_K(p_path, P, Ks) -> None:
    """Refuse, before the first fit, a K other than the ``--project`` P's columns.

    A projection keeps P, so its K is P's; otherwise every K before the bad
    one would be fitted first, and the library's message names no file.

    Raises
    ------
    UsageError
        Naming the P file, its columns and the K asked for.
    """
    other = [K for K in Ks if K != P.shape[1]]
    if other:
        raise UsageError(f"--project {p_path} has {P.shape[1]} columns (components), "
                         f"but -K asks for K = {', '.join(map(str, other))}: a "
                         f"projection's K is its P's; give -K {P.shape[1]}")


def _reference_members(args, genotypes, reference_q):
    """``--project``: which target individuals the reference's P was fitted on.

    Target IIDs matched against the reference's, in its Q's row order
    (:func:`admixspec.io.results.recorded_sample_ids`: the ``samples`` its
    JSON lists after ``--keep``/``--mind``, else its input's). They get the
    plain projection (``fit_admixture``'s ``reference_members``). None when
    the projection is not corrected, or, with a warning (the run goes on,
    correcting everyone), when the reference's IDs are not found.
    """
    from .fit.pipeline import correct_projection
    from .io.results import recorded_sample_ids

    if reference_q is None or not correct_projection(args.projection_correction,
                                                     len(reference_q)):
        return None
    q_path = Path(str(args.project)[: -len(".P")] + ".Q")
    try:
        ids = recorded_sample_ids([q_path], len(reference_q))
    except InputError as error:
        ids, why = None, str(error)
    else:
        why = (f"neither {q_path.with_suffix('.json').name} nor the input it records "
               f"lists {len(reference_q)} sample IDs")
    if ids is None:
        # info, not a warning: a reference fitted elsewhere has no IDs here, and
        # its users project new individuals
        logger.info("--project: the IDs of the reference's individuals are not "
                       "found (%s): any of them in the target are corrected as if new "
                       "to P, which moves their Q away from the truth", why)
        return None
    import numpy as np

    return np.isin(genotypes.samples, ids)


def _supervised_labels(args, genotypes):
    """The reference labels of ``--supervised`` (default: the input's .pop).

    The .pop has a line per individual of the input, in its order (as
    ADMIXTURE's); when ``--keep`` or ``--mind`` removed some, the lines of
    the others are taken, matched by sample ID. A .pop with a line per
    individual left is taken as it is.
    """
    from .io import read_pop
    from .ml.project import reference_populations

    pop_path = args.supervised or _default_prefix(args.input) + ".pop"
    if not args.supervised:
        pop_path = str(Path(args.input).with_name(Path(pop_path).name))
    n = genotypes.n_individuals
    n_input, rows = ((n, None) if args.keep is None and args.mind >= 1.0
                     else _input_rows(args.input, genotypes))
    if n_input == n:
        labels = read_pop(pop_path, n_individuals=n)
    else:
        try:
            labels = read_pop(pop_path, n_individuals=n_input)[rows]
        except InputError:  # a line per individual left, else that count's error
            labels = read_pop(pop_path, n_individuals=n)
    populations = reference_populations(labels)
    if not populations:
        raise InputError(f"none of the {n} individuals left after --keep/--mind has "
                         "a reference population label", path=pop_path)
    smallest = min(_flat(args.K))
    if smallest < len(populations):  # before the first K's fit, naming the file
        raise InputError(f"K={smallest} is smaller than the {len(populations)} "
                         "reference populations it names", path=pop_path)
    return labels


def _input_rows(path, genotypes):
    """The input's individual count, and where those of ``genotypes`` are among them.

    Matched by sample ID: FID and IID where both are known (PLINK, whose
    IIDs may repeat across families), else IID.

    Returns
    -------
    n_input : int
    rows : numpy.ndarray, int64, shape (genotypes.n_individuals,)
    """
    import numpy as np

    from .io.common import sample_rows
    from .io.reader import input_samples

    samples, families = input_samples(path)
    kept = genotypes.samples
    if families is not None and genotypes.families is not None:
        samples = np.char.add(np.char.add(families, "\t"), samples)
        kept = np.char.add(np.char.add(genotypes.families.astype(str), "\t"), kept)
    # the readers keep samples in file order, as sample_rows returns them
    return len(samples), sample_rows(samples, kept, path, kind=None)


def run_fit(args: argparse.Namespace) -> int:
    """``admixspec run``: per K, one :func:`admixspec.fit_admixture` call and its files.

    With ``--scheduler``, on that Dask cluster
    (:func:`admixspec.backends.distributed.scheduler`). The device is resolved
    first, so ``--device cuda`` without a GPU fails before the input is read.
    """
    from .backends import resolve_device
    from .backends.distributed import scheduler
    from .backends.distributed.cluster import device_with_scheduler, tls_security
    from .core.compilation import compile_notice
    from .core.threads import thread_limit

    _one_k_list(args)
    _check_run_flags(args)
    args.device = device_with_scheduler(args.scheduler, args.device)
    resolve_device(args.device)
    security = tls_security(args.tls_ca_file, args.tls_cert, args.tls_key)
    # -j for the whole run: the filters' counts and the K hint run outside
    # fit_admixture, which holds its own limit
    with thread_limit(args.threads), scheduler(args.scheduler, threads=args.threads,
                                               security=security) as traffic, \
            compile_notice():
        return _fit_and_write(args, traffic=traffic)


def _check_run_flags(args: argparse.Namespace) -> None:
    """``run``'s flags that argparse cannot check alone, before anything is read.

    Raises
    ------
    UsageError
        An ``--out`` that names a directory, or flags that the others make
        meaningless. (``-j`` above the threads this machine runs is lowered to
        them, with a warning.)
    """
    _check_prefix(args.out)
    _check_output_folder(args.out or _default_prefix(args.input))
    args.threads = _usable_threads(args.threads)
    if args.project and args.supervised is not None:
        raise UsageError("--supervised cannot be combined with --project: a "
                         "projection keeps the reference's P and never uses the "
                         "labels; give one")
    fixed = ("projection" if args.project
             else "supervised" if args.supervised is not None else None)
    # fit_admixture refuses these too (in its words), but after the input is read
    if fixed and args.runs > 1:
        raise UsageError(f"runs > 1 (--runs) are for unsupervised fits: a {fixed} "
                         "fit does not depend on its start")
    if fixed and args.reference_size is not None:
        raise UsageError("a reference (--reference-size) cannot be combined with "
                         "projection or supervised fits (--project, --supervised), "
                         "which fit everyone")
    if not args.project:
        # --reference-size projects too (onto its reference's P, corrected by default)
        plain = args.projection_correction is False and args.reference_size is None
        for flag, given in (("--plain-projection", plain),
                            ("--keep-ambiguous", args.keep_ambiguous),
                            ("--min-overlap", args.min_overlap is not None)):
            if given:
                raise UsageError(f"{flag} is an option of --project, which was not "
                                 "given")
    if args.project:
        _check_reference_kept(args)


def _check_reference_kept(args: argparse.Namespace) -> None:
    """Refuse a ``--project`` run whose outputs would replace the reference run's.

    With the reference's prefix (``run ref.bed -K 3 --project ref.3.P``, whose
    default prefix is the input's name) the projection wrote its own
    ``ref.3.P`` (the matched SNPs only), ``.P.snps``, ``.Q`` and ``.json``
    over the reference run's, which later projections then took as a
    projection's (uncorrected).

    Raises
    ------
    UsageError
        Naming the file and asking for another ``--out``.
    """
    from .io import output_path

    prefix = args.out or _default_prefix(args.input)
    for K in _flat(args.K):
        if output_path(prefix, K, "P").resolve() == Path(args.project).resolve():
            raise UsageError(
                f"--project {args.project} is this run's output {prefix}.{K}.P: the "
                "projection would overwrite the reference run's P, Q and JSON; give "
                "another --out")


def _check_prefix(prefix: str | None) -> None:
    """Refuse an output prefix that names a directory (files ``dir/.2.Q`` would follow).

    Raises
    ------
    UsageError
        ``prefix`` ends with a path separator or is an existing directory.
    """
    if prefix is None:
        return
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    if prefix.endswith(separators) or Path(prefix).is_dir():
        raise UsageError(f"--out is a prefix for the output files, not a directory: "
                         f"{prefix}")


def _check_output_folder(prefix: str) -> None:
    """Refuse, before the input is read, an output folder that cannot take files.

    The outputs are written after the fits, each staged as a new file in the
    prefix's folder (:func:`admixspec.io.common.write_all_or_none`): without
    this, an unwritable folder would cost the whole run. A folder that does
    not exist yet is created later, so its nearest existing ancestor must take
    a new entry. The probe, a uniquely named empty file, is removed at once;
    ``os.access`` would not do: it ignores read-only mounts and says yes to root.

    Raises
    ------
    OSError
        Naming the folder (``filename``) and why it takes no files.
    """
    folder = Path(prefix).parent
    nearest = next(path for path in (folder, *folder.parents) if path.exists())
    try:
        handle, probe = tempfile.mkstemp(prefix=".admixspec-probe-", dir=nearest)
    except OSError as err:
        what = ("the output files" if nearest == folder
                else f"the output folder {folder}")
        raise OSError(err.errno, f"cannot create {what} here ({err.strerror}); "
                      "choose another --out", str(nearest)) from None
    os.close(handle)
    os.unlink(probe)


def _usable_threads(threads: int | None) -> int | None:
    """``-j`` capped at the threads numba can run here, with a warning when it is.

    numba cannot run more than ``NUMBA_NUM_THREADS`` (this machine's CPUs,
    unless set), so more would be fewer for the kernels anyway, while the
    ``.bed`` reader starts every one: ``-j 4096`` read a 60 x 500 ``.bed`` in
    about a minute (a pool of 256 threads takes 0.05 s, of 2 a millisecond).
    ADMIXTURE and PLINK accept any count, so a script's ``-j 8`` still runs.
    """
    if threads is None:
        return None
    import numba  # here: only a run that sets -j pays for it before reading

    limit = numba.config.NUMBA_NUM_THREADS
    if threads > limit:
        logger.warning("-j/--threads %d is more than the %d threads this machine "
                       "runs (NUMBA_NUM_THREADS, by default its CPU count): using %d",
                       threads, limit, limit)
        return limit
    return threads


def _add_memory_argument(group) -> None:
    """``--memory`` (streaming) and ``--scheduler`` (Dask): where data and work live."""
    group.add_argument(
        "--scheduler", metavar="ADDRESS", default=None,
        help="run the likelihood passes on a Dask cluster: a scheduler address "
        "(tls://host:port with the --tls-* options; a plain tcp:// address that is not "
        "this machine warns: anyone who reaches it can run code as you) or scheduler "
        "file, or 'local:N' for N local worker processes (--threads threads each, "
        "default 1; TLS with a temporary certificate); needs admixspec[distributed]",
    )
    for flag, what in (("--tls-ca-file", "the certificate authority of the cluster"),
                       ("--tls-cert", "this client's certificate, signed by it"),
                       ("--tls-key", "the private key of --tls-cert (unless in it)")):
        group.add_argument(flag, metavar="FILE", default=None,
                           help=f"for a tls:// --scheduler: {what} (Dask's option)")
    group.add_argument(
        "--memory", type=_positive_int, default=None, metavar="MB",
        help="workspace budget in MiB (PLINK's --memory; default half of this machine's "
        "memory): a PLINK .bed or VCF Zarr store whose int8 "
        "genotypes take more than half of it is streamed from disk chunk by chunk "
        "(reference fit on the SNPs that fit, then streamed passes; no --cv, "
        "--bootstrap, --project, --supervised or --indep-pairwise)",
    )


def _read_for_run(args: argparse.Namespace):
    """``run``'s genotypes: in memory, or on disk if ``--memory`` says they won't fit."""
    from .backends.distributed.cluster import check_workers_read
    from .core.filters import check_usable

    flags = {"--cv": args.cv, "--bootstrap": args.bootstrap, "--project": args.project,
             "--supervised": args.supervised}
    genotypes = read_genotypes_from_args(
        args, stream=True, drop_monomorphic=False, check=not args.project,
        in_memory_for=[flag for flag, value in flags.items() if value is not None])
    if args.project:  # one new individual is a projection too
        check_usable(genotypes, individuals=1)
    check_workers_read(genotypes)  # --scheduler: workers that will read a .bed, now
    return genotypes


def _check_calls(genotypes, *, fits_p: bool) -> None:
    """Refuse genotypes with no SNP that varies; warn of individuals with no call.

    ``run`` reads with ``drop_monomorphic=False`` (P has a row per SNP), so
    the reader's check of 2 usable SNPs counts SNPs that cannot be fitted;
    this counts the polymorphic ones (a projection, with P fixed, needs
    none), before the K hint and the first fit. Genotypes left on disk lost
    their monomorphic SNPs to the streamed filters and were checked by the
    reader; their calls per individual were counted by the filters' pass
    (:func:`admixspec.io.streamed.filter_streamed`), so they are not read here.

    Parameters
    ----------
    genotypes : Genotypes or admixspec.io.streamed.StreamedGenotypes
    fits_p : bool
        Whether the fit estimates P (not a projection).

    Raises
    ------
    InputError
        Fewer than 2 polymorphic SNPs, naming the input.
    """
    from .fit.monomorphic import check_polymorphic, survey_calls

    if hasattr(genotypes, "chunks"):
        uncalled = (genotypes.chunks.n_observed == 0).nonzero()[0]
    else:
        n_polymorphic, uncalled = survey_calls(genotypes.dosage)
        if fits_p:
            check_polymorphic(n_polymorphic, genotypes.n_snps, path=genotypes.source)
    if uncalled.size:
        shown = ", ".join(map(str, genotypes.samples[uncalled[:3]]))
        logger.warning(
            "%s: %d individual(s) have no called genotype (%s%s): their Q rows only "
            "reflect the fit's start, not data; --mind (e.g. --mind 0.99) removes "
            "them", genotypes.source, uncalled.size, shown,
            ", ..." if uncalled.size > 3 else "")


def _p_rows_line(genotypes, p_file: Path, projection=None) -> str:
    """What the rows of PREFIX.K.P are, for the log: every SNP read, or which remain."""
    removed = sum(entry["removed"] for entry in genotypes.filter_log
                  if entry.get("unit") == "variants")
    text = f"P rows: {genotypes.n_snps} SNPs, named in {p_file.name}.snps"
    if projection is not None and projection.match is None:
        text += (", the target's SNPs in input order (the --project P has no SNP "
                 "table: its rows were taken as them, as logged above), with that "
                 "P's rows")
    elif projection is not None:
        text += (", the target's SNPs that the --project P has (SNP matching above), "
                 "with that P's rows")
    elif removed:
        text += (f" ({removed} of the {genotypes.n_snps + removed} variants read were "
                 "removed by the filters above)")
    else:
        text += ", one per variant read, in input order"
    return text


def _k_outputs(prefix, K, result, genotypes, projection, provenance, start, *,
               samples_selected=False, dask=None):
    """The files of one K of ``run`` (path -> text), and its seconds since ``start``.

    ``samples_selected``: ``--keep`` or ``--mind`` chose the individuals, whose
    IDs the JSON then lists (plot and report label Q's rows by them).
    ``dask``: where the fit's passes ran with ``--scheduler``
    (:func:`admixspec.io.provenance.dask_record`), logged and recorded.
    """
    from .io import output_path
    from .io.admixture import format_matrix, format_q
    from .io.common import format_json
    from .io.modes import modes_outputs
    from .io.provenance import dask_line, run_header, run_record
    from .io.snps import format_snps, snps_path

    p_file = output_path(prefix, K, "P")
    lines = run_header(genotypes, **provenance)
    if projection is not None:
        lines += projection.lines
    lines += [_p_rows_line(genotypes, p_file, projection)] + result.log_lines
    files = {
        output_path(prefix, K, "Q"): format_q(result.Q),
        p_file: format_matrix(result.P, "P"),
        snps_path(p_file): format_snps(genotypes.variants),
    }
    if result.modes is not None:
        files.update(modes_outputs(prefix, K, result.modes))
        lines.append(f"Modes: {output_path(prefix, K, 'modes.tsv')}")
    if result.bootstrap is not None:
        for kind in ("Q_se", "Q_bias"):
            files[output_path(prefix, K, kind)] = format_matrix(
                getattr(result.bootstrap, kind), kind, clamp=False
            )
        lines.append(f"Bootstrap standard errors: {output_path(prefix, K, 'Q_se')}")
    if result.reference is not None:  # its IDs, usable as --keep
        from .io.reader import format_keep

        families = genotypes.families
        files[output_path(prefix, K, "ref")] = format_keep(
            genotypes.samples[result.reference],
            None if families is None else families[result.reference])
        lines.append(f"Reference individuals: {output_path(prefix, K, 'ref')}")
    if dask is not None:
        lines.append(dask_line(dask))
    seconds = time.perf_counter() - start
    lines.append(f"Elapsed: {seconds:.3f} sec")
    files[output_path(prefix, K, "log")] = "".join(f"{line}\n" for line in lines)
    record = run_record(result, genotypes, seconds=seconds,
                        samples_selected=samples_selected, **provenance)
    record["p_snps"] = snps_path(p_file).name
    if projection is not None and projection.match is not None:
        record["projection_snps"] = projection.match.counts
    if dask is not None:
        record["dask"] = dask
    files[output_path(prefix, K, "json")] = format_json(record)
    return files, seconds


def _admixture_results(log_lines) -> list[str]:
    """The log's lines that ADMIXTURE prints on standard output and scripts read.

    Its final ``Loglikelihood:`` and, with ``--cv``, ``CV error (K=k):``: the
    manual's ``admixture --cv x.bed $K > log$K.out`` then ``grep -h CV
    log*.out``. Progress stays on standard error.
    """
    final = [line for line in log_lines if line.startswith("Loglikelihood: ")][-1:]
    return final + [line for line in log_lines if line.startswith("CV error (K=")]


def _print_lines(lines) -> bool:
    """Print to standard output; False once its reader has gone (``| head -1``).

    The run goes on without them: its results are the files.
    """
    try:
        for line in lines:
            print(line, flush=True)
    except BrokenPipeError:
        return False
    return True


def _remove_earlier_outputs(prefix, K: int, written) -> None:
    """Remove the optional files of K that an earlier run of this prefix left.

    An earlier ``--runs`` (more modes), ``-B`` or ``--reference-size`` run's
    ``PREFIX.K.mode<M>.Q``, ``.modes.tsv``, ``.Q_se``, ``.Q_bias`` or ``.ref``
    (:func:`admixspec.io.results.earlier_outputs`) described a Q that this
    run has just replaced. Removed after the new files are in place, so an
    interrupted run keeps the earlier run's set whole.
    """
    from .io.results import earlier_outputs

    for path in earlier_outputs(prefix, K, written):
        try:
            path.unlink()
        except OSError as error:
            logger.warning("%s: left by an earlier run, not removed (%s)", path,
                           error.strerror or error)
        else:
            logger.info("K=%d: removed %s, left by an earlier run", K, path.name)


def _fit_and_write(args: argparse.Namespace, *, traffic=None) -> int:
    """``run``'s fits (one :func:`admixspec.fit_admixture` per K) and their files.

    ``traffic``: the ``--scheduler`` cluster's
    :class:`~admixspec.backends.distributed.Traffic` (None without one), whose
    increase over each K's fit that K's log and JSON record.
    """
    from .core.filters import check_K
    from .fit.admixture import fit_admixture
    from .fit.reference import (
        DEFAULT_REFERENCE_SIZE,
        check_reference_size,
        reference_hint,
    )
    from .io.common import write_all_or_none
    from .io.provenance import dask_record

    Ks = sorted(set(_flat(args.K)))
    genotypes = _read_for_run(args)
    for K in Ks:  # every K, before the first fit
        try:  # a projection fits each individual alone: K may exceed them
            check_K(K, math.inf if args.project else genotypes.n_individuals)
        except UsageError as error:
            raise UsageError(f"{args.input}: {error}") from None
        if args.reference_size and args.reference_size < genotypes.n_individuals:
            check_reference_size(K, args.reference_size)
    projection = None
    if args.project:
        genotypes, projection = _projection_input(args, genotypes)
        _check_projection_K(args.project, projection.P, Ks)
    _check_calls(genotypes, fits_p=projection is None)
    prefix = args.out or _default_prefix(args.input)
    if Path(prefix).parent != Path("."):
        Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    given = {
        "P": None if projection is None else projection.P,
        "reference_q": None if projection is None else projection.reference_q,
        "reference_members": None if projection is None else _reference_members(
            args, genotypes, projection.reference_q),
        "labels": (None if args.supervised is None  # never with --project
                   else _supervised_labels(args, genotypes)),
    }
    everyone = args.project is not None or args.supervised is not None
    fitted = genotypes.n_individuals if everyone else (
        args.reference_size or DEFAULT_REFERENCE_SIZE)
    hint = reference_hint(genotypes, fitted, seed=args.seed)
    logger.info("Spectral K hint: %s", hint.describe())
    provenance = {"command": command_line(args._argv), "seed": args.seed,
                  "source": args.input, "k_hint": hint}
    cv_errors = {}
    stdout_open = True
    for K in Ks:
        start = time.perf_counter()
        logger.info("K=%d: fitting", K)
        before = None if traffic is None else traffic.record()
        result = fit_admixture(
            genotypes, K, reference_size=args.reference_size, init=args.init,
            seed=args.seed, refine=args.refine, tol=args.tol, max_iter=args.max_iter,
            cv=args.cv, bootstrap=args.bootstrap, threads=args.threads,
            device=args.device, runs=args.runs,
            projection_correction=args.projection_correction, **given,
        )
        files, seconds = _k_outputs(
            prefix, K, result, genotypes, projection, provenance, start,
            samples_selected=args.keep is not None or args.mind < 1.0,
            dask=dask_record(traffic, before))
        if result.cv is not None:
            cv_errors[K] = result.cv.error
        # One K's outputs appear together or not at all (a full disk part-way
        # would otherwise leave a .Q without its .P, .log and .json).
        write_all_or_none(files)
        logger.info("K=%d: wrote %s (%.1f s)", K,
                    ", ".join(sorted(path.name for path in files)), seconds)
        _remove_earlier_outputs(prefix, K, files)
        stdout_open = stdout_open and _print_lines(_admixture_results(result.log_lines))
    if len(cv_errors) > 1:
        best = min(cv_errors, key=cv_errors.get)
        logger.info("Best K by cross-validation error: %d (CV error %.5f)", best,
                    cv_errors[best])
    return 0


# ---------------------------------------------------------------------- plot, summary


def _names_genotypes(text: str) -> bool:
    """Whether a command-line word names genotypes, as the reader would tell
    (:func:`admixspec.io.reader.detect_format`: suffix, PLINK prefix, first bytes)."""
    from .io.reader import detect_format

    try:
        detect_format(text)
    except InputError:
        return False
    return True


def _k_after_input(text: str) -> list[int]:
    """:func:`_k_list` for ``run``'s K after the input (``run 3 x.bed`` swaps them)."""
    return _k_list(text, misplaced="give the input first, then K, as ADMIXTURE "
                   "takes them")


def _k_list(text: str, *, misplaced: str = "-K takes every value after it, so give "
            "the input before -K") -> list[int]:
    """Parse ``3``, ``2-5`` or ``2,3,4`` into a list of K; an empty range is an error.

    ``misplaced`` says what to do when ``text`` names genotypes.
    """
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                values.extend(range(low, high + 1))
            else:
                values.append(int(part))
        except ValueError:
            # `run -K 3 data.bed`: -K takes every value after it, the input too
            hint = f"; {misplaced}" if _names_genotypes(text) else ""
            raise argparse.ArgumentTypeError(
                f"not a K value or range: {text!r}{hint}"
            ) from None
        if "-" in part and high < low:
            raise argparse.ArgumentTypeError(
                f"empty K range {part!r}: write the smaller K first, e.g. "
                f"'{high}-{low}'"
            )
    if min(values) < 1:  # here, before a biobank's input is read
        raise argparse.ArgumentTypeError(f"K must be at least 1, got {text!r}")
    return values


def _flat(lists):
    return None if lists is None else [K for part in lists for K in part]


#: Where plot and report look for sample IDs without --ids
#: (:func:`admixspec.io.results.recorded_sample_ids`).
_IDS_DEFAULT = ("default: the input that PREFIX.K.json records, else PREFIX.fam, "
                "whichever first holds one ID per Q row")


def _add_population_arguments(parser, *, labels_help: str, ids_help: str) -> None:
    """``--labels``, ``--ids`` and ``--population-order``, as plot and report use."""
    parser.add_argument("--labels", metavar="FILE", help=labels_help)
    parser.add_argument("--ids", metavar="FILE", help=ids_help)
    parser.add_argument(
        "--population-order", metavar="POP,POP,...",
        type=lambda text: [p for p in text.split(",") if p],
        help="left-to-right population order; unlisted populations follow in order "
        "of first appearance",
    )


def _add_plot_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "plot",
        help="stacked-bar ancestry plot across K (and CV error against K)",
        description=(
            "Draw ADMIXTURE-style stacked-bar plots of one or more Q files: one "
            "panel per K in numeric order, individuals grouped by population and "
            "sorted within it, each ancestral component in one colour across K "
            "(components aligned by optimal assignment, as pong/CLUMPP do). The "
            "format follows the --out extension: .png, .pdf or .svg."
        ),
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="Q_OR_PREFIX",
        help="PREFIX.K.Q files, or run prefixes (every PREFIX.K.Q found is plotted)",
    )
    parser.add_argument(
        "-o", "--out", required=True, metavar="FILE",
        help="output figure; .png, .pdf or .svg",
    )
    _add_population_arguments(
        parser,
        labels_help="population labels: a .pop file (one label per line, Q row "
        "order), a .fam (family column), or a CSV/TSV with sample_id and population "
        "columns",
        ids_help="sample IDs in Q row order, to look a CSV/TSV label table up: the "
        f"run's .fam, .bed or VCF, or a file with one ID per line; {_IDS_DEFAULT}",
    )
    parser.add_argument(
        "-K", type=_k_list, nargs="+", action="extend", metavar="K",
        help="plot only these K: '3 4', '2-5' or '2,4,6'; all inputs if not given",
    )
    parser.add_argument(
        "--cv-out", metavar="FILE",
        help="also draw CV error against K (from the PREFIX.K.log files beside the "
        "Q files) to this .png/.pdf/.svg",
    )
    parser.add_argument("--title", help="figure title")
    parser.add_argument(
        "--width", type=_positive_float, metavar="INCHES",
        help="figure width; chosen from the number of individuals if not given",
    )
    parser.add_argument(
        "--panel-height", type=_positive_float, default=1.2, metavar="INCHES",
        help="height of one K panel",
    )
    parser.add_argument("--dpi", type=_positive_int, default=150, help="PNG resolution")
    parser.add_argument(
        "--no-align", action="store_true",
        help="draw Q columns as given, without aligning components across K",
    )
    parser.add_argument(
        "--modes", action="store_true",
        help="for run prefixes: one panel per mode of each K that 'run --runs' found "
        "(PREFIX.K.modes.tsv), named with its share of the runs; * marks the best "
        "run's mode",
    )
    parser.intermixed = True  # inputs after options: 'plot r.2.Q -o f.png r.3.Q'
    parser.set_defaults(runner=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    """``admixspec plot``: :func:`admixspec.plot_ancestry` (and ``plot_cv``)."""
    from .plot import figure_format, plot_ancestry, plot_cv, save_figure

    # Both figures or neither, as run writes a K's files: both are named and
    # drawn before either is written (a run without --cv, or a -K it lacks,
    # writes nothing), and the CV figure is removed again if the ancestry
    # figure then fails to be written.
    for out in filter(None, (args.out, args.cv_out)):
        figure_format(out)
    if args.cv_out and Path(args.cv_out).resolve() == Path(args.out).resolve():
        # the bars would be written over the CV figure
        raise UsageError(f"--cv-out and --out name the same file: {args.out}")
    cv = plot_cv(args.inputs) if args.cv_out else None
    bars = plot_ancestry(
        args.inputs, labels=args.labels, sample_ids=args.ids,
        population_order=args.population_order, Ks=_flat(args.K),
        align=not args.no_align, title=args.title, width=args.width,
        panel_height=args.panel_height, dpi=args.dpi, modes=args.modes,
    )
    if cv is not None:
        save_figure(cv, args.cv_out, dpi=cv.dpi)
    try:
        save_figure(bars, args.out, dpi=args.dpi)
    except BaseException:
        if cv is not None:
            Path(args.cv_out).unlink(missing_ok=True)
        raise
    return 0


def _add_summary_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "summary",
        help="table of a run over K: estimator, log-likelihood, CV error, time, best K",
        description=(
            "Tabulate PREFIX.K.log/.json for every PREFIX.K.Q: K, the estimator (the "
            "fit's path: a spectral estimate's log-likelihood is below maximum "
            "likelihood's on the same K), log-likelihood, CV error, wall time in "
            "seconds, and 'best' on the K with the lowest CV error."
        ),
    )
    parser.add_argument("prefix", help="the --out prefix of admixspec run")
    parser.add_argument(
        "-K", type=_k_list, nargs="+", action="extend", metavar="K",
        help="only these K: '3 4', '2-5' or '2,4,6'; every PREFIX.K.Q if not given",
    )
    parser.add_argument(
        "-o", "--out", metavar="TSV",
        help="write the table as tab-separated values; printed if not given",
    )
    parser.set_defaults(runner=run_summary)


def run_summary(args: argparse.Namespace) -> int:
    """``admixspec summary``: one call to :func:`admixspec.io.results.summarize_runs`."""
    from .io.results import summarize_runs

    table = summarize_runs(args.prefix, Ks=_flat(args.K))
    # the log-likelihood with the logs' 6 decimals: "%.10g" and pandas' display
    # (-3.799887e+06 for ADMIXTURE's HapMap3 -3799887.171935) hid differences
    # between runs below 1 unit
    table["loglik"] = [None if value != value else f"{value:.6f}"
                       for value in table["loglik"]]
    if args.out:
        from .io.common import write_text

        write_text(args.out, table.to_csv(sep="\t", index=False, float_format="%.10g"))
    else:
        # na_rep does not reach None in object columns
        table = table.fillna({"estimator": "-", "loglik": "-"})
        print(table.to_string(index=False, na_rep="-"))
    return 0


def _add_report_parser(subparsers) -> None:
    parser = _add_subcommand(
        subparsers,
        "report",
        help="one self-contained interactive HTML report of a run",
        description=(
            "Write one HTML file that opens from disk with no server and no network: "
            "ancestry bars of every PREFIX.K.Q (and of every mode, where "
            "PREFIX.K.modes.tsv exists), aligned across K in plot's colours, "
            "grouped by population and sortable by component, with each "
            "individual's Q (and bootstrap SE) on hover; CV error against K, "
            "log-likelihood per run and mode shares; the estimator each K used and "
            "why; the input and filters; versions and command lines. Needs "
            "admixspec[report] (Bokeh)."
        ),
    )
    parser.add_argument("prefix", help="the --out prefix of admixspec run")
    parser.add_argument(
        "-o", "--out", required=True, metavar="HTML", help="the report to write",
    )
    _add_population_arguments(
        parser,
        labels_help="population labels, as plot takes them: a .pop file, a .fam "
        "(family column), or a CSV/TSV with sample_id and population columns",
        ids_help="sample IDs in Q row order (the run's .fam, .bed or VCF, or one ID "
        f"per line); {_IDS_DEFAULT}; without them, individuals are numbered",
    )
    parser.add_argument(
        "-K", type=_k_list, nargs="+", action="extend", metavar="K",
        help="only these K: '3 4', '2-5' or '2,4,6'; every PREFIX.K.Q if not given",
    )
    parser.add_argument("--title", help="page title (default: the prefix's name)")
    parser.set_defaults(runner=run_report)


def run_report(args: argparse.Namespace) -> int:
    """``admixspec report``: one call to :func:`admixspec.report.write_report`."""
    from .report import write_report

    write_report(
        args.prefix, args.out, labels=args.labels, sample_ids=args.ids,
        population_order=args.population_order, Ks=_flat(args.K), title=args.title,
        command=command_line(args._argv),
    )
    return 0


# --------------------------------------------------------------------------- parser


def get_parser() -> argparse.ArgumentParser:
    """Build the ``admixspec`` argument parser with all subcommands."""
    parser = _Parser(
        prog="admixspec",
        description=(
            "Genetic ancestry (admixture) inference by a spectral tensor-eigenpair "
            "method, with ADMIXTURE-compatible outputs."
        ),
    )
    parser.add_argument("--version", action="version",
                        version=f"admixspec {__version__}")
    subparsers = parser.add_subparsers(
        title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser
    )
    # One _add_<name>_parser(subparsers) per subcommand; add new ones here.
    _add_run_parser(subparsers)
    _add_simulate_parser(subparsers)
    _add_info_parser(subparsers)
    _add_plot_parser(subparsers)
    _add_summary_parser(subparsers)
    _add_report_parser(subparsers)
    return parser


@contextlib.contextmanager
def _logging_to_stderr(args: argparse.Namespace):
    """Log as ``admixspec: <message>`` on stderr in the block, then restore the loggers.

    In-process callers of :func:`main` (tests, notebooks, workflows) keep their
    own logging configuration afterwards.
    """
    level = (logging.DEBUG if args.debug else logging.WARNING if args.quiet
             else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("admixspec: %(message)s"))
    # Python warnings (logging.captureWarnings) print in the same format.
    loggers = [logger, logging.getLogger("py.warnings")]
    saved = [(each.handlers, each.level, each.propagate) for each in loggers]
    for each in loggers:
        each.handlers, each.propagate = [handler], False
    logger.setLevel(level)
    try:
        yield
    finally:
        for each, (handlers, level, propagate) in zip(loggers, saved, strict=True):
            each.handlers, each.propagate = handlers, propagate
            each.setLevel(level)


@contextlib.contextmanager
def _warnings_as_log_lines():
    """Show warnings as ``admixspec: <Category>: <message>`` lines, not Python's format.

    Python's format adds the file, line and source line of the ``warnings.warn``
    call, which mean nothing to a command-line user; the state is restored on
    exit, so in-process callers of :func:`main` keep theirs.
    """
    original = warnings.formatwarning
    warnings.formatwarning = _warning_line
    # a caller's own logging.captureWarnings(True) stays on after main()
    captured = warnings.showwarning is getattr(logging, "_showwarning", None)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        if not captured:
            logging.captureWarnings(False)
        warnings.formatwarning = original


def _warning_line(message, category, filename, lineno, line=None) -> str:
    return f"{category.__name__}: {message}"


def _error_line(error: BaseException) -> str:
    from .io.errors import one_line  # a parser's message may span lines

    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"admixspec: error: {where}{one_line(error.strerror or error)}"
    return f"admixspec: error: {one_line(error)}"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; ``None`` uses ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 1 for data errors (bad or unusable input) and when the
        reader of stdout has gone (``admixspec info x | head``), 2 for usage
        errors. (argparse itself exits with 2 via ``SystemExit`` on bad flags.)
    """
    try:
        return _main(argv)
    finally:
        if argv is None:  # the process: it exits next
            # The interpreter's exit runs the cyclic garbage collector over
            # every object numba, pandas and scipy created: about 0.5 s of a
            # 4 s run on the HapMap3 tutorial data, 0.07 s frozen
            # (benchmarks/exit_time.py, docs/benchmarks.md). Frozen objects
            # are skipped; outputs and logs are closed by now.
            gc.freeze()


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


#: ``run``'s flags whose value, when given, is a count.
_OPTIONAL_COUNTS = ("--cv", "-B", "--bootstrap")


def _admixture_order(argv: list[str]) -> list[str]:
    """``run``'s arguments with ADMIXTURE's bare ``--cv data.bed 3`` made unambiguous.

    ADMIXTURE attaches these flags' values (``--cv=10``, ``-B2000``); argparse
    would take the next argument, the input, as the value. A bare flag moves
    to the end (before ``--``), where it takes its default: ``--cv``, ``-B``
    or ``--bootstrap`` followed by something that is not a count, and
    ``--supervised`` followed by the first word that names genotypes (the
    input, not a population file) or, after the input, by a number that
    names no file (K: ``run data.bed --supervised 3``).
    """
    if not argv or argv[0] != "run":
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    words = argv[:end]
    first_input = None if "--supervised" not in words else next(
        (i for i, word in enumerate(words) if _names_genotypes(word)), None)

    def bare(i):
        if words[i] in _OPTIONAL_COUNTS:
            return not _is_integer(words[i + 1])
        return words[i] == "--supervised" and (
            i + 1 == first_input
            or (first_input is not None and first_input < i
                and _is_integer(words[i + 1]) and not os.path.exists(words[i + 1])))

    moved = [i for i in range(len(words) - 1) if bare(i)]
    return ([word for i, word in enumerate(words) if i not in moved]
            + [words[i] for i in moved] + argv[end:])


#: ADMIXTURE 1.3's options that ``run`` does not have, and what it does instead.
_ADMIXTURE_ONLY = {
    "-P": "ADMIXTURE's -P (projection onto PREFIX.K.P.in) is --project PFILE here: "
          "give the reference's .P file, e.g. --project ref.3.P",
    "-c": "ADMIXTURE's -c (the stopping rule of the CV and bootstrap refits) is not "
          "an option here: admixspec chooses that rule itself; -C sets the point "
          "estimate's",
    "-m": "ADMIXTURE's -m/--method is not an option here: maximum likelihood is "
          "always ADMIXTURE's default, block relaxation with quasi-Newton "
          "acceleration (-m block -a qn3)",
    "-a": "ADMIXTURE's -a/--acceleration is not an option here: maximum likelihood "
          "is always ADMIXTURE's default, block relaxation with quasi-Newton "
          "acceleration (-m block -a qn3)",
    "-l": "ADMIXTURE's penalized estimation (-l/--lambda) is not supported",
    "--haploid": "ADMIXTURE's --haploid is not supported: every call is read as "
                 "diploid, a haploid one as homozygous (as PLINK 1 stores it)",
}
_ADMIXTURE_ONLY.update({"--method": _ADMIXTURE_ONLY["-m"],
                        "--acceleration": _ADMIXTURE_ONLY["-a"],
                        "--lambda": _ADMIXTURE_ONLY["-l"]})

#: What argparse reads as a negative number, not as an option (its own rule).
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _unknown_options(parser: argparse.ArgumentParser, words) -> list[str]:
    """The words that argparse would read as options ``parser`` does not have.

    argparse's own rules: an option's unique prefix (``--sup``), a value after
    ``=`` (``--cv=10``) or attached to a short option (``-j4``); negative numbers
    and words after ``--`` are not options.
    """
    known = [name for action in parser._actions for name in action.option_strings]
    unknown = []
    for word in words:
        if word == "--":
            break
        if (not word.startswith("-") or word == "-" or " " in word
                or _NEGATIVE_NUMBER.match(word)):
            continue
        name = word.split("=", 1)[0]
        if name in known or (
            any(option.startswith(name) for option in known) if word.startswith("--")
            else word[:2] in known
        ):
            continue
        unknown.append(word)
    return unknown


def _refuse_unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Refuse a subcommand's unknown options before argparse reads the rest.

    argparse names them last, after every other error, so ``run -c 0.01
    data.bed 3`` read ``0.01`` as the input and blamed ``data.bed`` for not
    being a K. ADMIXTURE's options that ``run`` lacks are named with what to
    do instead (:data:`_ADMIXTURE_ONLY`).
    """
    subparsers = next((action for action in parser._actions
                       if isinstance(action, argparse._SubParsersAction)), None)
    if not argv or subparsers is None or argv[0] not in subparsers.choices:
        return
    subparser = subparsers.choices[argv[0]]
    unknown = _unknown_options(subparser, argv[1:])
    if not unknown:
        return
    if argv[0] == "run":
        for word in unknown:  # --method=em, -m, or a short flag with its value: -P3
            message = _ADMIXTURE_ONLY.get(word.split("=", 1)[0]) or (
                not word.startswith("--") and _ADMIXTURE_ONLY.get(word[:2]))
            if message:
                subparser.error(message)
    subparser.error(f"unrecognized arguments: {' '.join(unknown)}")


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """The command line's arguments as :func:`main` reads them.

    :func:`get_parser`'s parse, after unknown options are refused (see
    :func:`_refuse_unknown_options`) and ADMIXTURE's bare ``run --cv data.bed 3``
    is made unambiguous (see :func:`_admixture_order`).
    """
    parser = get_parser()
    _refuse_unknown_options(parser, argv)
    return parser.parse_args(_admixture_order(argv))


def _main(argv):
    """:func:`main` but for the console's exit."""
    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_arguments(given)
    if not hasattr(args, "runner"):
        get_parser().print_help(sys.stderr)
        return 2
    args._argv = given
    try:
        with _logging_to_stderr(args), _warnings_as_log_lines():
            status = int(args.runner(args) or 0)
        sys.stdout.flush()  # here, so that a closed stdout raises inside main()
        return status
    except BrokenPipeError:  # `admixspec info x | head` closed stdout: quiet, as head
        if argv is None:  # the exit's own flush of stdout would raise it again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except UsageError as error:
        if args.debug:
            raise
        print(_error_line(error), file=sys.stderr)
        return 2
    except (InputError, AdmixspecError, OSError) as error:
        if args.debug:
            raise
        print(_error_line(error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("admixspec: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
