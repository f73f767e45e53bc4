"""The likelihood passes of a fit on a Dask ``distributed`` cluster.

A pass of the ML engine splits into chunks of SNPs (all individuals; see
:mod:`admixspec.core.chunks`). Here the chunks live on Dask workers
(:class:`DaskChunks`): every pass sends the shared arguments (Q, ...) to each
worker once, runs one task per chunk with that chunk's P rows where the chunk
lives, and gathers the results in order. A worker lost mid-fit loses its
chunks; they are placed again (from the in-memory matrix, or recomputed by
Dask from their ``.bed`` reads) and the pass is rerun, so the fit completes
with the same result, or stops with a one-line :class:`DistributedError`.

Use it from Python with a client you already have::

    from dask.distributed import Client
    from admixspec.backends.distributed import use_client

    client = Client("tls://scheduler:8786", security=security)  # docs/distributed.md
    with use_client(client):
        result = fit_admixture(genotypes, K=4)

and from the command line with ``admixspec run --scheduler ADDRESS`` (a
``tls://`` address with ``--tls-ca-file``, ``--tls-cert``, ``--tls-key``, a
``tcp://`` one, or a scheduler file) or ``--scheduler local:N`` (a local
cluster of N worker processes under TLS), which runs the same code path
(:func:`scheduler`). Needs the ``distributed`` extra
(``pip install 'admixspec[distributed]'``).
"""

from .chunks import DaskChunks, DistributedError, Traffic
from .cluster import connect, scheduler, use_client

__all__ = ["DaskChunks", "DistributedError", "Traffic", "connect", "scheduler",
           "use_client"]
