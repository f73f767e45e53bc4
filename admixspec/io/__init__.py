"""Readers and writers: genotypes, ADMIXTURE files, simulations.

Genotypes come from VCF/BCF, PLINK 1 (.bed) and PLINK 2 (.pgen) files, or
from scikit-allel arrays (:func:`from_allel`).
"""

from .admixture import (
    CLAMP,
    output_path,
    read_admixture_log,
    read_p,
    read_pop,
    read_q,
    write_p,
    write_q,
)
from .allel import from_allel
from .common import atomic_write, parse_region, write_all_or_none, write_json, write_text
from .pgen import read_pgen
from .plink import plink_prefix, read_plink, write_plink
from .reader import detect_format, read_genotypes, read_keep
from .simulation import write_labels, write_simulation
from .vcf import read_vcf, write_vcf

__all__ = [
    "CLAMP",
    "atomic_write",
    "detect_format",
    "from_allel",
    "output_path",
    "parse_region",
    "plink_prefix",
    "read_admixture_log",
    "read_genotypes",
    "read_keep",
    "read_p",
    "read_pgen",
    "read_pop",
    "read_plink",
    "read_q",
    "read_vcf",
    "write_all_or_none",
    "write_json",
    "write_labels",
    "write_p",
    "write_plink",
    "write_q",
    "write_simulation",
    "write_text",
    "write_vcf",
]
