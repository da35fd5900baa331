// Names of enums as users type them: one table per enum (names.hpp), from which every name, parser
// and listing is derived.
#include "actmem/names/names.hpp"

#include <cstdlib>
#include <string>

#include "actmem/config/config.hpp"
#include "actmem/core/dtype.hpp"
#include "actmem/model/model.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/setup/policy.hpp"

namespace actmem {

namespace {

template <class E, std::size_t N>
EnumTable<E> table(const EnumName<E> (&t)[N]) {
  return EnumTable<E>{t, N};
}

const EnumName<Profile> kProfiles[] = {{Profile::kMegatron, "megatron"},
                                       {Profile::kTextbook, "textbook"},
                                       {Profile::kPytorch, "pytorch"},
                                       {Profile::kHf, "hf"}};
const EnumName<Attention> kAttention[] = {{Attention::kEager, "eager"},
                                          {Attention::kSdpaMath, "sdpa_math"},
                                          {Attention::kFlash, "flash"},
                                          {Attention::kSdpaCudnn, "sdpa_cudnn"}};
const EnumName<Optimizer> kOptimizers[] = {{Optimizer::kAdamW, "adamw"},
                                           {Optimizer::kSgd, "sgd"},
                                           {Optimizer::kSgdMomentum, "sgd_momentum"},
                                           {Optimizer::kAdam8bit, "adam8bit"},
                                           {Optimizer::kAdafactor, "adafactor"},
                                           {Optimizer::kAdamW, "adam", false}};
const EnumName<OptimizerImpl> kOptimizerImpls[] = {{OptimizerImpl::kAuto, "auto"},
                                                   {OptimizerImpl::kForeach, "foreach"},
                                                   {OptimizerImpl::kFused, "fused"},
                                                   {OptimizerImpl::kForLoop, "for-loop"}};
const EnumName<Schedule> kSchedules[] = {{Schedule::kGpipe, "gpipe"},
                                         {Schedule::k1F1B, "1f1b"},
                                         {Schedule::kInterleaved, "interleaved"},
                                         {Schedule::kZbH1, "zb-h1"},
                                         {Schedule::kZbV, "zb-v"},
                                         {Schedule::kDualPipe, "dualpipe"},
                                         {Schedule::kDualPipeV, "dualpipev"}};
const EnumName<Framework> kFrameworks[] = {
    {Framework::kPlain, "plain"},           {Framework::kMegatronLm, "megatron-lm"},
    {Framework::kTorchtitan, "torchtitan"}, {Framework::kDeepspeed, "deepspeed"},
    {Framework::kHfTrainer, "hf-trainer"},  {Framework::kVerl, "verl"}};
const EnumName<ShardGroup> kShardGroups[] = {{ShardGroup::kDp, "dp"}, {ShardGroup::kDpCp, "dp-cp"}};
const EnumName<Float8> kFloat8s[] = {{Float8::kNone, "none"},
                                     {Float8::kTensorwise, "tensorwise"},
                                     {Float8::kRowwise, "rowwise"},
                                     {Float8::kMxfp8, "mxfp8"},
                                     {Float8::kDelayed, "delayed"}};
const EnumName<FfnType> kFfn[] = {{FfnType::kGelu, "gelu"},
                                  {FfnType::kSwiglu, "swiglu"},
                                  {FfnType::kGeglu, "geglu"},
                                  {FfnType::kRelu2, "relu2"}};
const EnumName<Mixer> kMixers[] = {
    {Mixer::kAttention, "attention"}, {Mixer::kMamba2, "mamba2"}, {Mixer::kNone, "none"}};
const EnumName<NormType> kNorms[] = {{NormType::kLayerNorm, "layernorm"},
                                     {NormType::kRmsNorm, "rmsnorm"}};
const EnumName<PosEncoding> kPos[] = {
    {PosEncoding::kLearned, "learned"}, {PosEncoding::kRope, "rope"}, {PosEncoding::kNone, "none"}};
const EnumName<BlockLayout> kBlocks[] = {{BlockLayout::kSequential, "sequential"},
                                         {BlockLayout::kParallel, "parallel"},
                                         {BlockLayout::kParallelTwoNorms, "parallel_two_norms"}};
// Float dtypes a config may name, with the aliases Hugging Face writes in torch_dtype.
const EnumName<DType> kFloatDtypes[] = {
    {DType::kFp32, "fp32"},           {DType::kBf16, "bf16"},
    {DType::kFp16, "fp16"},           {DType::kFp8, "fp8"},
    {DType::kFp32, "float32", false}, {DType::kBf16, "bfloat16", false},
    {DType::kFp16, "float16", false}, {DType::kFp8, "float8", false}};
// Every dtype a record can have (written back only).
const EnumName<DType> kAllDtypes[] = {
    {DType::kFp32, "fp32"}, {DType::kBf16, "bf16"},   {DType::kFp16, "fp16"},
    {DType::kFp8, "fp8"},   {DType::kBool, "bool"},   {DType::kInt64, "int64"},
    {DType::kInt8, "int8"}, {DType::kInt32, "int32"}, {DType::kComplex64, "complex64"}};

}  // namespace

EnumTable<Profile> profile_table() {
  return table(kProfiles);
}
EnumTable<Attention> attention_table() {
  return table(kAttention);
}
EnumTable<Optimizer> optimizer_table() {
  return table(kOptimizers);
}
EnumTable<OptimizerImpl> optimizer_impl_table() {
  return table(kOptimizerImpls);
}
EnumTable<Schedule> schedule_table() {
  return table(kSchedules);
}
EnumTable<Framework> framework_table() {
  return table(kFrameworks);
}
EnumTable<ShardGroup> shard_group_table() {
  return table(kShardGroups);
}
EnumTable<Float8> float8_table() {
  return table(kFloat8s);
}
EnumTable<FfnType> ffn_table() {
  return table(kFfn);
}
EnumTable<NormType> norm_table() {
  return table(kNorms);
}
EnumTable<PosEncoding> pos_table() {
  return table(kPos);
}
EnumTable<BlockLayout> block_table() {
  return table(kBlocks);
}
EnumTable<DType> float_dtype_table() {
  return table(kFloatDtypes);
}

std::string recompute_names() {
  return std::string("none, selective, full, every:K (K >= 1), custom, layers:PATTERN (letters ") +
         kChoiceLetters[0] + " " + kChoiceLetters[1] + " " + kChoiceLetters[2] + " " +
         kChoiceLetters[3] + " " + kChoiceLetters[4] +
         "; lower-case k s c x offload that layer's kept bytes), op:torchtitan, op:ID,ID,...";
}

const char* dtype_name(DType t) {
  return table(kAllDtypes).name(t);
}
bool parse_float_dtype(const std::string& s, DType* out) {
  return float_dtype_table().parse(s, out);
}
const char* ffn_name(FfnType f) {
  return ffn_table().name(f);
}
const char* norm_name(NormType n) {
  return norm_table().name(n);
}
const char* pos_name(PosEncoding p) {
  return pos_table().name(p);
}
const char* block_name(BlockLayout b) {
  return block_table().name(b);
}
const char* mixer_name(Mixer x) {
  return table(kMixers).name(x);
}
const char* profile_name(Profile p) {
  return profile_table().name(p);
}
const char* attention_name(Attention a) {
  return attention_table().name(a);
}
const char* optimizer_name(Optimizer o) {
  return optimizer_table().name(o);
}
const char* optimizer_impl_name(OptimizerImpl i) {
  return optimizer_impl_table().name(i);
}
bool parse_optimizer_impl(const std::string& s, OptimizerImpl* out) {
  return optimizer_impl_table().parse(s, out);
}
const char* schedule_name(Schedule s) {
  return schedule_table().name(s);
}
const char* framework_name(Framework f) {
  return framework_table().name(f);
}
bool parse_framework(const std::string& s, Framework* out) {
  return framework_table().parse(s, out);
}
const char* shard_group_name(ShardGroup g) {
  return shard_group_table().name(g);
}
bool parse_shard_group(const std::string& s, ShardGroup* out) {
  return shard_group_table().parse(s, out);
}
const char* float8_name(Float8 f) {
  return float8_table().name(f);
}
bool parse_float8(const std::string& s, Float8* out) {
  return float8_table().parse(s, out);
}
bool parse_profile(const std::string& s, Profile* out) {
  return profile_table().parse(s, out);
}
bool parse_attention(const std::string& s, Attention* out) {
  return attention_table().parse(s, out);
}
bool parse_optimizer(const std::string& s, Optimizer* out) {
  return optimizer_table().parse(s, out);
}
bool parse_schedule(const std::string& s, Schedule* out) {
  return schedule_table().parse(s, out);
}

std::string recompute_name(const Recompute& r) {
  switch (r.kind) {
    case RecomputeKind::kNone:
      return "none";
    case RecomputeKind::kSelective:
      return "selective";
    case RecomputeKind::kFull:
      return "full";
    case RecomputeKind::kEveryK:
      return "every:" + std::to_string(r.every_k);
    case RecomputeKind::kCustom: {
      if (!r.op_policy.empty()) return "op:" + r.op_policy;
      if (!r.ops) return "custom";
      std::string s = "op:";
      for (std::size_t i = 0; i < r.custom_keep.size(); ++i) s += (i ? "," : "") + r.custom_keep[i];
      return s;
    }
    case RecomputeKind::kPattern:
      return "layers:" + r.pattern;
  }
  return "?";
}

bool parse_recompute(const std::string& s, Recompute* out) {
  Recompute r = *out;
  if (s == "none")
    r.kind = RecomputeKind::kNone;
  else if (s == "selective")
    r.kind = RecomputeKind::kSelective;
  else if (s == "full")
    r.kind = RecomputeKind::kFull;
  else if (s == "custom")
    r.kind = RecomputeKind::kCustom, r.ops = false, r.op_policy.clear();
  else if (s == "op:torchtitan")
    r.kind = RecomputeKind::kCustom, r.ops = false, r.op_policy = "torchtitan",
    r.custom_keep.clear();
  else if (s.rfind("op:", 0) == 0 && s.size() > 3 && s.size() <= 3 + 4096) {
    // op:ID,ID,...: the ops whose outputs are saved (validated against the layer's ops later).
    std::vector<std::string> ids;
    std::size_t start = 3;
    while (true) {
      const std::size_t comma = s.find(',', start);
      const std::string id = s.substr(start, comma == std::string::npos ? comma : comma - start);
      if (id.empty()) return false;
      ids.push_back(id);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    r.kind = RecomputeKind::kCustom, r.ops = true, r.op_policy.clear(), r.custom_keep = ids;
  } else if (s.rfind("layers:", 0) == 0 && s.size() > 7 && s.size() <= 7 + 4096) {
    for (std::size_t i = 7; i < s.size(); ++i)
      if (std::string(kChoiceLetters).find(s[i]) == std::string::npos &&
          std::string(kOffloadLetters).find(s[i]) == std::string::npos)
        return false;
    r.kind = RecomputeKind::kPattern;
    r.pattern = s.substr(7);
  } else if (s.rfind("every:", 0) == 0 && s.size() > 6 && s.size() <= 15) {
    for (std::size_t i = 6; i < s.size(); ++i)
      if (s[i] < '0' || s[i] > '9') return false;
    std::uint64_t k = std::strtoull(s.c_str() + 6, nullptr, 10);
    if (k == 0) return false;
    r.kind = RecomputeKind::kEveryK;
    r.every_k = k;
  } else {
    return false;
  }
  *out = r;
  return true;
}

}  // namespace actmem
