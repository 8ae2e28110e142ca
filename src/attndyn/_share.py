"""Blocks of work handed out one at a time to threads, so that a thread that runs faster takes more.

``numba.prange`` splits its range among the threads once, in equal parts: when one core is slower (a host that
lends its virtual cores unevenly, another process on one of them) the other waits at the end for its part. Here
each of ``threads`` workers (numba's threads in a ``prange`` over the workers, or threads of the caller's own
running a compiled function without the GIL) takes the next block from a shared counter (:func:`next_block`, one
atomic fetch-and-add) until none is left. Which thread runs a block never changes what the block computes.
"""

from __future__ import annotations

import threading
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: Blocks of sequences per thread that the planar kernels cut a batch into: fine enough that a thread on a
#: faster core takes its extra share, coarse enough that a block's setup (its scratch rows) is nothing.
BLOCKS_PER_THREAD = 32

#: numba's ``workqueue`` threading layer (attndyn's choice, see :mod:`attndyn._kernels`) aborts the whole process
#: when two Python threads are in parallel regions at once (several threads of a program running attndyn): each of
#: attndyn's parallel regions runs holding this lock, so that a second one waits for the first to end.
PARALLEL_REGION = threading.Lock()


def _next_block(typingctx, counter):  # pragma: no cover - compiled
    """``counter[0]`` before adding 1 to it, atomically (sequentially consistent): the block this worker takes.
    ``counter``: a one-element int64 array shared by the workers, 0 at the start."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "seq_cst")

    return sig, codegen


#: :func:`_next_block` as numba compiles it (an intrinsic: callable from compiled code only).
next_block: Any = intrinsic(_next_block)
