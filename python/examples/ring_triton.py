"""A Triton kernel that stores into the next PE's copy of a symmetric tensor, through tshmem.peer_ptrs (the
addresses of a tensor's copies on every PE, 0 where no load or store reaches).

    mpirun -np 2 python ring_triton.py     (one GPU per PE, or TSHMEM_ALLOW_SHARED_GPU=1)
"""
import torch
import triton
import triton.language as tl


@triton.jit
def ring_kernel(ptrs, src, n_elem, me, n_pes, BLOCK: tl.constexpr):
    nxt = (me + 1) % n_pes
    dst = tl.load(ptrs + nxt).to(tl.pointer_type(tl.float32))  # the next PE's copy, an address like any other
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elem
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def ring(tshmem, count=10000):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    buf = tshmem.zeros(count, torch.float32)
    src = torch.arange(count, dtype=torch.float32, device=buf.device) + 1e5 * me
    ptrs = tshmem.peer_ptrs(buf)
    with torch.cuda.device(buf.device):
        ring_kernel[(triton.cdiv(count, 1024),)](ptrs, src, count, me, n, BLOCK=1024)
    tshmem.barrier_all()  # on the same stream: every PE's stores are complete and visible
    expect = torch.arange(count, dtype=torch.float32, device=buf.device) + 1e5 * ((me - 1) % n)
    assert torch.equal(buf, expect), (buf[:4], expect[:4])
    tshmem.free(buf)
    print(f'PE {me}: the Triton ring over peer_ptrs is right')


if __name__ == '__main__':
    import tshmem
    with tshmem.initialized():
        ring(tshmem)
