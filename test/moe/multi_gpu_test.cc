// The multi-GPU test of tshmem_moe: with device 0 current, every entry point on inputs that live on another
// device returns outputs on that device, equal to the same call on device 0, and leaves device 0 current
// and idle; then the same shapes on device 0 again (per-device caches must not leak another device's
// facts). Every other device takes its turn, so an 8-GPU host checks device 7 as well as device 1.
#include <string>

#include "moe_test_util.h"

using namespace moe_test;

namespace {

struct Results {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::string> names;
};

// Checks where an output lives, then keeps its bytes.
void keep(Results &r, const Tensor &t, int device, const std::string &name) {
  EXPECT_EQ(t.device, device) << name;
  if (t.data) {
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, t.data), cudaSuccess) << name;
    EXPECT_EQ(attr.device, device) << name << " was allocated on the wrong device";
  }
  r.bytes.push_back(gather(t));
  r.names.push_back(name);
}

// Every entry point once, inputs on `device`, outputs allocated by the library on `stream`.
void run_all(int device, cudaStream_t stream, Results &res) {
  const int64_t T = 2000, E = 32, K = 6, H = 512;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> scores(static_cast<size_t>(T * E)), bias(static_cast<size_t>(E));
  for (float &v : scores) v = nd(rng);
  for (float &v : bias) v = nd(rng);
  int64_t rows = 0;
  std::vector<int64_t> idx = generate_topk_idx(T / 8, K, E, 8, 11, &rows);
  Tensor sh = view(scores, TSHMEM_MOE_FLOAT32, {T, E}), s3h = view(scores, TSHMEM_MOE_FLOAT32, {T, 4, E / 4});
  Tensor bh = view(bias, TSHMEM_MOE_FLOAT32, {E}), ih = view(idx, TSHMEM_MOE_INT64, {rows, K});
  Mirror s(sh, device), s3(s3h, device), b(bh, device), id(ih, device), uq(ih, device);

  Out o1, o2, o3, o4, o5, o6, o7, o8, o9;
  MOE_OK(tshmem_moe_topk_gate(&s, K, &o1, stream));
  keep(res, o1.t, device, "topk_gate");
  MOE_OK(tshmem_moe_topk_sum_and_topk_group_idx(&s3, 2, 2, &o2, stream));
  keep(res, o2.t, device, "topk_sum_and_topk_group_idx");
  tshmem_moe_top2_sum_gate_params_t p{};
  p.num_topk = K, p.num_groups = 4, p.num_topk_groups = 2, p.routed_scaling_factor = 2.5f;
  p.num_ep_ranks = 4, p.num_tp_ranks = 1, p.scoring_func = TSHMEM_MOE_SCORING_SIGMOID;
  MOE_OK(tshmem_moe_top2_sum_gate(&s, &b, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &o3, &o4, stream));
  keep(res, o3.t, device, "top2_sum_gate idx");
  keep(res, o4.t, device, "top2_sum_gate weights");
  MOE_OK(tshmem_moe_group_count(&id, E, &o5, stream));
  keep(res, o5.t, device, "group_count");
  MOE_OK(tshmem_moe_aux_fi(&id, E, K, &o6, stream));
  keep(res, o6.t, device, "aux_fi");
  MOE_OK(tshmem_moe_normalize_weight(&s, &o7, &o8, stream));
  keep(res, o7.t, device, "normalize_weight den");
  keep(res, o8.t, device, "normalize_weight");
  MOE_OK(tshmem_moe_mask_indices_by_tp(&id, E * 8, 8, 1, 2, &o9, stream));
  keep(res, o9.t, device, "mask_indices_by_tp");
  MOE_OK(tshmem_moe_inplace_unique_group_indices(uq.ptr(), E, stream));
  keep(res, uq.d, device, "inplace_unique_group_indices");

  tshmem_moe_fused_mapping_t m{};
  MOE_OK(tshmem_moe_get_fused_mapping(&id, E, 0, 64, 0, &m, nullptr, nullptr, stream));
  keep(res, m.pos_to_expert, device, "pos_to_expert");
  keep(res, m.token_topk_to_pos, device, "token_topk_to_pos");
  keep(res, m.expert_start, device, "expert_start");
  std::vector<uint16_t> x(static_cast<size_t>(rows * H));
  for (uint16_t &v : x) v = static_cast<uint16_t>(rng() & 0x3fff);  // finite bf16
  std::vector<float> xsf(static_cast<size_t>(rows * (H / 128)), 0.5f);
  Tensor xh = view(x, TSHMEM_MOE_BFLOAT16, {rows, H}), xsfh = view(xsf, TSHMEM_MOE_FLOAT32, {rows, H / 128});
  Mirror xd(xh, device), xsfd(xsfh, device);
  Out f1, f2, f3, y;
  MOE_OK(tshmem_moe_expand_to_fused(&xd, &m.token_topk_to_pos, &m.pos_to_expert, &f1, stream));
  keep(res, f1.t, device, "expand_to_fused");
  MOE_OK(
      tshmem_moe_expand_to_fused_with_sf(&xd, &xsfd, 128, &m.token_topk_to_pos, &m.pos_to_expert, 1, &f2, &f3, stream));
  keep(res, f2.t, device, "expand_to_fused_with_sf x");
  keep(res, f3.t, device, "expand_to_fused_with_sf sf");
  MOE_OK(tshmem_moe_reduce_fused(&f1.t, nullptr, nullptr, &m.token_topk_to_pos, "", nullptr, &y, stream));
  keep(res, y.t, device, "reduce_fused");
  Tensor *all[] = {&m.pos_to_expert, &m.pos_to_token, &m.pos_to_token_topk,    &m.token_topk_to_pos,
                   &m.expert_start,  &m.expert_end,   &m.num_tokens_per_expert};
  for (Tensor *t : all) tshmem_moe_tensor_free(t, stream);
}

TEST(MoeMultiGpu, InputsOnEveryOtherDeviceWithDevice0Current) {
  MOE_REQUIRE_GPUS(2);
  tshmem_moe_set_num_sms(0);
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // Reference: everything on device 0.
  Results r0;
  run_all(0, nullptr, r0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  for (int device = 1; device < devices; ++device) {
    SCOPED_TRACE("inputs on device " + std::to_string(device));
    // On a stream of that device while device 0 stays current; then on that device's legacy stream.
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    for (cudaStream_t s : {stream, static_cast<cudaStream_t>(nullptr)}) {
      Results r1;
      run_all(device, s, r1);
      int cur = -1;
      ASSERT_EQ(cudaGetDevice(&cur), cudaSuccess);
      EXPECT_EQ(cur, 0) << "the caller's device was not restored";
      EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess) << "work was left on device 0";
      ASSERT_EQ(r0.bytes.size(), r1.bytes.size());
      for (size_t i = 0; i < r0.bytes.size(); ++i) EXPECT_EQ(r0.bytes[i], r1.bytes[i]) << r0.names[i];
    }
    // An SM override valid on one device is checked against the device it is used on.
    int sms0 = 0, sms = 0;
    MOE_OK(tshmem_moe_get_device_num_sms(0, &sms0));
    MOE_OK(tshmem_moe_get_device_num_sms(device, &sms));
    EXPECT_EQ(sms0, sms);
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }

  // Device 0 again (the other devices' caches must not leak), then it synchronises cleanly.
  Results r2;
  run_all(0, nullptr, r2);
  for (size_t i = 0; i < r0.bytes.size(); ++i) EXPECT_EQ(r0.bytes[i], r2.bytes[i]) << r0.names[i];
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(MoeMultiGpu, MismatchedDevicesAreRefused) {
  MOE_REQUIRE_GPUS(2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<float> logits(64 * 16), bias(16);
  Tensor lh = view(logits, TSHMEM_MOE_FLOAT32, {64, 16}), bh = view(bias, TSHMEM_MOE_FLOAT32, {16});
  Mirror ld(lh, 1), bd(bh, 0);
  tshmem_moe_top2_sum_gate_params_t p{};
  p.num_topk = 2, p.num_ep_ranks = 1, p.num_tp_ranks = 1, p.routed_scaling_factor = 1.0f;
  Out a, b;
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&ld, &bd, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_DEVICE_MISMATCH);
  const std::string msg = tshmem_moe_last_error();
  EXPECT_NE(msg.find("'bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cuda:1"), std::string::npos) << msg;
  int cur = -1;
  cudaGetDevice(&cur);
  EXPECT_EQ(cur, 0);
}

}  // namespace
