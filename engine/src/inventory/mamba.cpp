// The Mamba-2 mixer's saved tensors: transformers' PyTorch reference path (torch_forward, the
// `pytorch`/`hf` profiles with eager or sdpa_math attention), the fused Triton kernels of mamba_ssm
// (`flash`), and Megatron-LM's MambaMixer (`megatron`). Axes: H heads of P channels, N-wide state,
// G groups, I = H·P, chunks of Q tokens (docs/formulas.md, "Mamba-2 mixer").
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kTorch =
    "transformers 5.17 modeling_mamba2.py / modeling_nemotron_h.py torch_forward (the naive SSD "
    "chunked scan); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kFused =
    "mamba_ssm ssd_combined.py MambaSplitConv1dScanCombinedFn.forward, save_for_backward "
    "(state-spaces/mamba @ e9594ce1, L888-889), called by transformers 5.17 cuda_kernels_forward "
    "in training with the gated norm and out_proj fused";
constexpr const char* kMegatron =
    "Megatron-LM megatron/core/ssm/mamba_mixer.py _ssm_training (@ d98e8a64, L679-733): "
    "mamba_split_conv1d_scan_combined without the norm or out_proj, then ExtendedRMSNorm and "
    "TERowParallelLinear";
constexpr const char* kTorchFp32 =
    "transformers 5.17 torch_forward in fp32 (x.float() and gate.to(float32) return their "
    "input); measured with its re-implementation on PyTorch 2.6 (CPU): "
    "tests/reference/mamba_cpu.json";
constexpr const char* kTorchNorm =
    "transformers 5.17 MambaRMSNormGated (Mamba2: over I; Nemotron-H: per group of I/G); "
    "measured: tests/reference/gpu/hf_layers.json";
}  // namespace

void add_mamba_torch(const LayerKind& k, const LayerGeometry& g, RecordBuilder& rb) {
  const DType p = g.act;
  const DType f = DType::kFp32;
  rb.add("mamba.in_proj_in", {g.b, g.s_rep, g.h}, p, "in_proj backward",
         "weight gradient needs the input (the normed hidden state)", kTorch);
  // A = -exp(A_log.float()): exp's backward reads its output.
  rb.add("mamba.A_exp", {g.mh}, f, "exp backward", "exp keeps its output, one per head", kTorch);
  // conv1d reads a transposed slice of in_proj's output [z, xBC, dt]: the whole projection's
  // storage stays alive for it.
  rb.add("mamba.in_proj_out", {g.b, g.s_tp, g.min}, p, "conv1d backward",
         "the conv input [x, B, C] is a view into in_proj's whole output", kTorch);
  // conv1d pads K-1 on both sides; SiLU reads the causal slice [..., :s] of that output.
  rb.add("mamba.conv_out", {g.b, g.mconv, g.s_conv}, p, "silu backward",
         "SiLU's input is a slice of the convolution's (s+K-1)-long output", kTorch);
  rb.add("mamba.dt_in", {g.b, g.s_tp, g.mh}, p, "softplus backward",
         "softplus(dt + dt_bias) reads its input", kTorch);
  rb.add("mamba.dt_softplus", {g.b, g.s_tp, g.mh}, p, "clamp backward",
         "clamp to time_step_limit reads its input", kTorch);
  // x.float(): D * pad(x) keeps the padded fp32 copy, x * dt keeps x and dt; A * dt keeps A
  // and dt. Below fp32, x.float() is a copy and each multiply by the low-precision dt kept an
  // fp32 dt of its own (measured on PyTorch 2.11, CUDA; PyTorch 2.6 on the CPU keeps the one dt,
  // tests/reference/mamba_cpu.json). In fp32, x is a view of the SiLU output [x, B, C], whose
  // whole storage stays, and both multiplies keep the one dt (measured: mamba_cpu.json).
  rb.add("mamba.x_padded", {g.b, g.s_pad, g.mi}, f, "mul backward (D residual)",
         "D * pad(x) keeps the padded fp32 x", kTorch);
  if (p == f) {
    rb.add("mamba.x", {g.b, g.s_tp, g.mconv}, f, "mul backward (x * dt)",
           "x * dt keeps x, a view of the SiLU output [x, B, C]", kTorchFp32);
    rb.add("mamba.dt", {g.b, g.s_tp, g.mh}, f, "mul backward (x * dt, A * dt)",
           "both multiplies keep dt", kTorchFp32);
  } else {
    rb.add("mamba.x", {g.b, g.s_tp, g.mi}, f, "mul backward (x * dt)", "x * dt keeps the fp32 x",
           kTorch);
    rb.add("mamba.dt_for_x", {g.b, g.s_tp, g.mh}, f, "mul backward (x * dt)",
           "x * dt keeps dt, in fp32", kTorch);
    rb.add("mamba.dt_for_A", {g.b, g.s_tp, g.mh}, f, "mul backward (A * dt)",
           "A * dt keeps dt, in fp32", kTorch);
  }
  rb.add("mamba.A", {g.mh}, f, "mul backward (A * dt)", "A * dt keeps A = -exp(A_log)", kTorch);
  // 1. Within each chunk: L = exp(segsum(A·dt)), G = C·B^T per chunk, M = G ⊙ L, Y_diag = M x.
  // Each segsum masks twice (masked_fill keeps each ~mask, Q x Q bools).
  rb.add("mamba.segsum_fill_mask", {g.mq, g.mq}, DType::kBool, "masked_fill backward",
         "segment_sum's strictly-lower mask (the fill with 0)", kTorch);
  rb.add("mamba.segsum_inf_mask", {g.mq, g.mq}, DType::kBool, "masked_fill backward",
         "segment_sum's lower mask (the fill with -inf)", kTorch);
  rb.add("mamba.L", {g.b, g.mh, g.mc, g.mq, g.mq}, f, "exp / mul backward",
         "L = exp(segsum) is kept by exp and by G * L", kTorch);
  rb.add("mamba.C", {g.b, g.s_pad, g.mh, g.mn}, f, "mul backward (C * B, C * states)",
         "C in fp32, repeated to every head and padded to whole chunks", kTorch);
  rb.add("mamba.B", {g.b, g.s_pad, g.mh, g.mn}, f, "mul backward (C * B, B * decay)",
         "B in fp32, repeated to every head and padded to whole chunks", kTorch);
  rb.add("mamba.G", {g.b, g.s_pad, g.mq, g.mh}, f, "mul backward (G * L)",
         "G = sum(C * B) per chunk, Q keys for every token", kTorch);
  rb.add("mamba.x_dt", {g.b, g.s_pad, g.mi}, f, "mul backward (M * x, B_decay * x)",
         "x * dt, padded to whole chunks", kTorch);
  rb.add("mamba.M", {g.b, g.s_pad, g.mq, g.mh}, f, "mul backward (M * x)", "M = sum(G * L)",
         kTorch);
  // 2. Each chunk's final state: decay_states = exp(A_cumsum[-1] - A_cumsum).
  rb.add("mamba.decay_states", {g.b, g.mh, g.s_pad}, f, "exp / mul backward",
         "exp keeps its output, B * decay_states reads it", kTorch);
  rb.add("mamba.B_decay", {g.b, g.s_pad, g.mh, g.mn}, f, "mul backward (B_decay * x)",
         "B * decay_states", kTorch);
  // 3. The recurrence over chunks: segsum over the c+1 chunk totals (the initial zero state
  // first).
  rb.add("mamba.chunk_fill_mask", {g.mc1, g.mc1}, DType::kBool, "masked_fill backward",
         "segment_sum's strictly-lower mask over the chunk totals", kTorch);
  rb.add("mamba.chunk_inf_mask", {g.mc1, g.mc1}, DType::kBool, "masked_fill backward",
         "segment_sum's lower mask over the chunk totals", kTorch);
  rb.add("mamba.decay_chunk", {g.b, g.mh, g.mc1, g.mc1}, f, "exp / mul backward",
         "exp keeps its output, the state recurrence reads it", kTorch);
  rb.add("mamba.states", {g.b, g.mc1, g.mh, g.mp, g.mn}, f, "mul backward (decay_chunk * states)",
         "the chunk states after cat with the zero initial state", kTorch);
  // 4. State to output: Y_off = sum(C * states) * exp(A_cumsum).
  rb.add("mamba.state_decay_out", {g.b, g.mh, g.s_pad}, f, "exp / mul backward",
         "exp(A_cumsum) keeps its output", kTorch);
  rb.add("mamba.new_states", {g.b, g.mc1, g.mh, g.mp, g.mn}, f, "mul backward (C * states)",
         "the states entering each chunk (a view of all c+1)", kTorch);
  rb.add("mamba.C_states", {g.b, g.s_pad, g.mi}, f, "mul backward (Y_off)",
         "sum(C * states) per token and channel", kTorch);
  // The gated RMSNorm in fp32: y * silu(z.float()), then rsqrt(mean((y·silu z)^2) + eps) per row
  // (or per group of I/G channels), weight * normed (normed stays fp32: y's dtype).
  // In fp32 the gate is a view of in_proj's output, already kept.
  if (p != f)
    rb.add("mamba.norm.gate", {g.b, g.s_tp, g.mi}, f, "silu backward",
           "the fp32 copy of the gate z", kTorchNorm);
  rb.add("mamba.norm.y", {g.b, g.s_pad, g.mi}, f, "mul backward (y * silu(z))",
         "the scan output y plus the D residual (padded storage)", kTorchNorm);
  rb.add("mamba.norm.gate_silu", {g.b, g.s_tp, g.mi}, f, "mul backward (y * silu(z))",
         "silu(z) in fp32", kTorchNorm);
  rb.add("mamba.norm.gated", {g.b, g.s_tp, g.mi}, f, "pow / mul backward",
         "y * silu(z), squared and scaled", kTorchNorm);
  rb.add("mamba.norm.rstd", {g.b, g.s_tp, k.mamba.norm_per_group ? g.mgroups : Dim{"1", 1}}, f,
         "rsqrt / mul backward", "the fp32 1/rms per row (per group with grouped norms)",
         kTorchNorm);
  rb.add("mamba.norm.normed", {g.b, g.s_tp, g.mi}, f, "mul-by-weight backward",
         "weight gradient needs the normalized fp32 row", kTorchNorm);
  rb.add("mamba.out_proj_in", {g.b, g.s_tp, g.mi}, p, "out_proj backward",
         "weight gradient needs the input, cast back to the activation dtype", kTorch);
}

void add_mamba_fused(const LayerGeometry& g, RecordBuilder& rb) {
  const DType p = g.act;
  const DType f = DType::kFp32;
  rb.add("mamba.in_proj_in", {g.b, g.s_rep, g.h}, p, "in_proj backward",
         "weight gradient needs the input (the normed hidden state)", kFused);
  rb.add("mamba.A_exp", {g.mh}, f, "exp backward", "exp keeps its output, one per head", kFused);
  // The kernel keeps zxbcdt (in_proj's whole output) and rebuilds the convolution, dt, the chunk
  // cumsums, C·B^T and the chunk states from it in backward.
  rb.add("mamba.in_proj_out", {g.b, g.s_tp, g.min}, p, "fused conv1d + scan backward",
         "zxbcdt: the kernel recomputes the convolution and the scan's inputs from it", kFused);
  rb.add("mamba.A", {g.mh}, f, "fused scan backward", "A = -exp(A_log), an input it keeps", kFused);
  rb.add("mamba.scan_out", {g.b, g.s_tp, g.mh, g.mp}, p, "fused gated norm + out_proj backward",
         "out_x: the scan output before the gate and norm (out_proj's input is recomputed)",
         kFused);
  rb.add("mamba.norm.rstd", {g.b, g.s_tp, g.mgroups}, f, "fused gated norm backward",
         "the fp32 1/rms of each group of I/G channels (group_size = I/G)", kFused);
}

void add_mamba_megatron(const LayerGeometry& g, RecordBuilder& rb) {
  const DType p = g.act;
  // Korthikanti et al. 2022, Sec. 4.1's accounting: every per-token tensor the code keeps, at
  // the activation width; per-head vectors (A, dt_bias in fp32) and norm statistics are left
  // out as for the attention block's norms.
  rb.add("mamba.in_proj_in", {g.b, g.s_rep, g.h}, p, "in_proj backward",
         "TELayerNormColumnParallelLinear keeps the normed input for the weight gradient",
         kMegatron);
  rb.add("mamba.in_proj_out", {g.b, g.s_tp, g.min}, p, "fused conv1d + scan backward",
         "the contiguous (b, l, d) copy of zxBCdt the kernel keeps", kMegatron);
  rb.add("mamba.scan_out", {g.b, g.s_tp, g.mh, g.mp}, p, "fused scan backward (z gate)",
         "out_x: the scan output before the z gate", kMegatron);
  rb.add("mamba.norm.in", {g.b, g.s_tp, g.mi}, p, "gated RMSNorm backward",
         "ExtendedRMSNorm keeps its input, the gated scan output made contiguous", kMegatron);
  rb.add("mamba.out_proj_in", {g.b, g.s_tp, g.mi}, p, "out_proj backward",
         "TERowParallelLinear keeps its input, the norm's output", kMegatron);
}

}  // namespace actmem::detail
