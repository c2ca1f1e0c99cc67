"""A cache prefetch hint for the kernels: ``prefetch(array, index)`` asks the CPU to start
loading the cache line of ``array[index]`` and goes on at once (LLVM's ``llvm.prefetch``,
read, high locality).  It changes no value, only when memory arrives: the z-sweeps use it to
fetch the next token's row of Phi while the current token is drawn.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, config, types
from numba import njit
from numba.core.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Prefetch ``array[index]`` (``index`` an int, or a tuple of ints for a 2-D array)."""
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        values = context.make_array(array_type)(context, builder, args[0])
        if isinstance(index_type, types.BaseTuple):
            raw = cgutils.unpack_tuple(builder, args[1], count=len(index_type))
            kinds = list(index_type)
        else:
            raw, kinds = [args[1]], [index_type]
        indices = [context.cast(builder, v, t, types.intp) for v, t in zip(raw, kinds)]
        pointer = cgutils.get_item_pointer(context, builder, array_type, values, indices)
        pointer = builder.bitcast(pointer, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(hint, [pointer, i32(0), i32(3), i32(1)])  # read, keep, data cache
        return context.get_dummy_value()

    return sig, codegen


if config.DISABLE_JIT:  # pure Python (NUMBA_DISABLE_JIT=1, the mutation runs): nothing to hint

    def prefetch(array, index):  # noqa: F811, ARG001
        """No-op: an intrinsic cannot run without the JIT, and a hint changes no value."""


#: Tokens ahead whose row of Phi the z-sweeps prefetch (1 to 8 all help; 4 and 8 the most in an A/B
#: of the MH z-sweep on 20 Newsgroups at K = 100).
AHEAD = 4


@njit(cache=True, inline="always")
def prefetch_row(phi_wk, w, nz, n_nz):
    """Start loading what a token of word ``w`` will read of ``phi_wk[w]``: the whole row when
    the document's ``n_nz`` topics ``nz[:n_nz]`` would touch most of its cache lines, else
    the entries of those topics only (at K = 1000 a 20 Newsgroups document uses about 60
    topics, against the row's 63 lines of 16 float32)."""
    if n_nz * max(1, 64 // phi_wk.itemsize) >= phi_wk.shape[1]:
        prefetch_whole_row(phi_wk, w)
    else:
        for j in range(n_nz):
            prefetch(phi_wk, (w, nz[j]))


@njit(cache=True, inline="always")
def prefetch_whole_row(phi_wk, w):
    """Start loading every cache line of ``phi_wk[w]`` (the dense sweeps read all of it)."""
    per_line = max(1, 64 // phi_wk.itemsize)
    for k in range(0, phi_wk.shape[1], per_line):
        prefetch(phi_wk, (w, k))
