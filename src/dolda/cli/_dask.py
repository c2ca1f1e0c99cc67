"""``dolda fit --scheduler``: the Dask cluster options and the client, probed before any
work so that an unreachable scheduler ends in one line.
"""

from __future__ import annotations

import contextlib

import click

from ._options import _FloatRange

#: Seconds ``dolda fit --scheduler`` waits for the scheduler to answer.
DEFAULT_CONNECT_TIMEOUT = 10.0


def _cluster_options(func):
    """``--scheduler``, ``--shards``, ``--phi-transport`` and ``--connect-timeout`` of
    ``fit``."""
    options = [
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Fit on the workers of the Dask scheduler at ADDRESS (e.g. "
                          "tcp://10.0.0.5:8786); needs dask[distributed] here and the same "
                          "dolda on every worker."),
        click.option("--shards", "n_shards", type=click.IntRange(min=1), default=None,
                     help="Document shards, the unit of distribution and recovery; the same "
                          "--seed and --shards give the same chain with or without "
                          "--scheduler  [default: one per ~1M tokens]."),
        click.option("--phi-transport", type=click.Choice(["auto", "recipe", "dense"]),
                     default="auto", show_default=True,
                     help="With --scheduler: send the workers the counts Phi was drawn from "
                          "(recipe: each worker repeats the draw) or Phi itself (dense); "
                          "auto: whichever is smaller. Same chain either way."),
        click.option("--connect-timeout", type=_FloatRange(min=0, min_open=True),
                     default=DEFAULT_CONNECT_TIMEOUT, show_default=True, metavar="SECONDS",
                     help="How long to wait for --scheduler to answer."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _worker_dolda_version():
    """Run on a worker: the dolda version it imports (fails there if it has none)."""
    from .. import __version__

    return __version__


@contextlib.contextmanager
def _dask_client(address, timeout: float):
    """A ``distributed.Client`` of the scheduler at ``address``, current inside the block.

    Yields None without an address, else a short description of the workers.
    The scheduler is probed first (one connection, ``timeout`` seconds) so that
    an unreachable address ends in one line, not in a half-built client.
    """
    if address is None:
        yield None
        return
    try:
        import asyncio
        import concurrent.futures

        from distributed import Client
        from distributed.comm import connect
    except ImportError:
        raise click.ClickException(
            "--scheduler needs dask.distributed, which is not installed: "
            "pip install 'dask[distributed]' (or dolda[dask])") from None

    async def probe():
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(probe())
    except (OSError, ValueError, TypeError, asyncio.TimeoutError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise click.ClickException(f"cannot reach the Dask scheduler at {address} within "
                                   f"{timeout:g} s: {reason}") from None
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError) as exc:  # went away since the probe
        raise click.ClickException(f"cannot connect to the Dask scheduler at {address}: "
                                   f"{' '.join(str(exc).split())}") from None
    with client, client.as_current():
        try:
            versions = client.run(_worker_dolda_version)
        except Exception as exc:  # the worker could not unpickle or import dolda
            raise click.ClickException(
                f"the workers of {address} cannot run dolda ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())}); install the same dolda on every "
                "worker") from None
        from .. import __version__

        other = sorted({v for v in versions.values() if v != __version__})
        if other:
            click.echo(f"Warning: workers run dolda {', '.join(other)}, this is "
                       f"{__version__}: install the same version everywhere", err=True)
        n_threads = sum(client.nthreads().values())
        try:
            yield (f"{len(versions)} workers, {n_threads} threads" if versions
                   else "no workers yet: waiting for some")
        except click.ClickException:
            raise
        except Exception as exc:
            # CommClosedError (an OSError), a cancelled future, or whatever the backend
            # trips on once the client gave up reconnecting: the scheduler went away
            comm = isinstance(exc, (OSError, asyncio.TimeoutError, asyncio.CancelledError,
                                    concurrent.futures.CancelledError))
            if not comm and client.status == "running":
                raise
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise click.ClickException(
                f"lost the Dask scheduler at {address} during the fit ({type(exc).__name__}: "
                f"{reason[:200]}); with --checkpoint, rerun with --resume once it is back"
            ) from None

