"""Every PE writes a note into its slot of every PE's inbox, then sums its own inbox.

    mpirun -np 2 python hello.py                   # MPI bootstrap (also srun)
    torchrun --nproc-per-node 2 hello.py           # torch.distributed's group as the bootstrap

One GPU per PE (TSHMEM_ALLOW_SHARED_GPU=1 lets PEs share one); without a GPU the heap is host memory (shm).
"""
import os

import torch
import torch.distributed as dist

import tshmem

if 'TORCHELASTIC_RUN_ID' in os.environ:  # started by torchrun
    dist.init_process_group('gloo')
    tshmem.init(group=dist.group.WORLD)
else:  # started by mpirun or srun
    tshmem.init()
me, n = tshmem.my_pe(), tshmem.n_pes()
inbox = tshmem.zeros(n, torch.int64, array_type='torch')  # collective: same shape and dtype on every PE
note = torch.full((1,), 100 * me, dtype=torch.int64, device=inbox.device)
for pe in range(n):
    tshmem.put(inbox[me:me + 1], note, pe)  # my slot in PE pe's inbox (on torch's current stream on a GPU)
tshmem.barrier_all()  # every PE's puts are complete and visible
print(f'PE {me} of {n}: sum of notes = {int(inbox.sum())}')  # 100 * (0 + 1 + ... + n-1)
tshmem.free(inbox)
tshmem.finalize()
