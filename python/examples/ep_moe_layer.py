"""One MoE layer's communication with tshmem.ep (docs/ep-python.md): each PE routes its tokens to the experts of
every PE, the experts scale their rows, and combine brings the rows home summed.
    mpirun -np 2 python ep_moe_layer.py
(one GPU per PE; on one GPU: TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_MEM_BACKEND=vmm)."""
import torch

import tshmem
from tshmem import ep

tshmem.init()  # under mpirun or srun; tshmem.init(group=...) under torchrun
me, n = tshmem.my_pe(), tshmem.n_pes()
torch.cuda.set_device(tshmem.device())
num_tokens, hidden, num_topk, num_experts = 128, 1024, 4, 8 * n
num_nvl_bytes, num_rdma_bytes = ep.buffer_size_hint(n, num_tokens, hidden, torch.bfloat16, num_topk)

with ep.Buffer(None, num_nvl_bytes, num_rdma_bytes) as buffer:  # collective; destroyed collectively on exit
    torch.manual_seed(me)
    x = torch.randn(num_tokens, hidden, device='cuda').to(torch.bfloat16)
    topk_idx = torch.stack([torch.randperm(num_experts, device='cuda')[:num_topk] for _ in range(num_tokens)])
    topk_weights = torch.softmax(torch.randn(num_tokens, num_topk, device='cuda'), dim=1)

    num_tokens_per_rank, num_tokens_per_rdma_rank, num_tokens_per_expert, is_token_in_rank, _ = \
        buffer.get_dispatch_layout(topk_idx, num_experts)
    recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list, handle, _ = buffer.dispatch(
        x, num_tokens_per_rank=num_tokens_per_rank, num_tokens_per_rdma_rank=num_tokens_per_rdma_rank,
        is_token_in_rank=is_token_in_rank, num_tokens_per_expert=num_tokens_per_expert, topk_idx=topk_idx,
        topk_weights=topk_weights)
    # The experts: each received row times its weights for this PE's experts (0 for the others' entries).
    expert_out = (recv_x.float() * recv_topk_weights.sum(dim=1, keepdim=True)).to(torch.bfloat16)
    combined_x, _, _ = buffer.combine(expert_out, handle)
    # Home again, each token is x times the sum of its weights (1 after the softmax), up to bf16 rounding.
    err = (combined_x.float() - x.float()).abs().max().item()
    print(f'PE {me} of {n}: received {recv_x.shape[0]} rows, per local expert {num_recv_tokens_per_expert_list}, '
          f'max |combined_x - x| = {err:.3f}')
tshmem.finalize()
