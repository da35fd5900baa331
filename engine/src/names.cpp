// Names of enums as users type them, and their parsers (one table per enum, used everywhere).
#include <cstdlib>
#include <string>

#include "actmem/config.hpp"
#include "actmem/dtype.hpp"
#include "actmem/model.hpp"

namespace actmem {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kBool:
      return "bool";
    case DType::kInt64:
      return "int64";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

bool parse_float_dtype(const std::string& s, DType* out) {
  if (s == "fp32" || s == "float32")
    *out = DType::kFp32;
  else if (s == "bf16" || s == "bfloat16")
    *out = DType::kBf16;
  else if (s == "fp16" || s == "float16")
    *out = DType::kFp16;
  else if (s == "fp8" || s == "float8")
    *out = DType::kFp8;
  else
    return false;
  return true;
}

const char* ffn_name(FfnType f) {
  switch (f) {
    case FfnType::kGelu:
      return "gelu";
    case FfnType::kSwiglu:
      return "swiglu";
    case FfnType::kGeglu:
      return "geglu";
  }
  return "?";
}
const char* norm_name(NormType n) {
  return n == NormType::kLayerNorm ? "layernorm" : "rmsnorm";
}
const char* pos_name(PosEncoding p) {
  switch (p) {
    case PosEncoding::kLearned:
      return "learned";
    case PosEncoding::kRope:
      return "rope";
    case PosEncoding::kNone:
      return "none";
  }
  return "?";
}

const char* profile_name(Profile p) {
  switch (p) {
    case Profile::kMegatron:
      return "megatron";
    case Profile::kTextbook:
      return "textbook";
    case Profile::kPytorch:
      return "pytorch";
    case Profile::kHf:
      return "hf";
  }
  return "?";
}
const char* attention_name(Attention a) {
  switch (a) {
    case Attention::kEager:
      return "eager";
    case Attention::kSdpaMath:
      return "sdpa_math";
    case Attention::kFlash:
      return "flash";
  }
  return "?";
}
const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kSgdMomentum:
      return "sgd_momentum";
    case Optimizer::kAdam8bit:
      return "adam8bit";
    case Optimizer::kAdafactor:
      return "adafactor";
  }
  return "?";
}

std::string recompute_name(const Recompute& r) {
  std::string s;
  switch (r.kind) {
    case RecomputeKind::kNone:
      s = "none";
      break;
    case RecomputeKind::kSelective:
      s = "selective";
      break;
    case RecomputeKind::kFull:
      s = "full";
      break;
    case RecomputeKind::kEveryK:
      s = "every:" + std::to_string(r.every_k);
      break;
    case RecomputeKind::kCustom:
      s = "custom";
      break;
    case RecomputeKind::kPattern:
      s = "layers:" + r.pattern;
      break;
  }
  return s;
}

bool parse_profile(const std::string& s, Profile* out) {
  if (s == "megatron")
    *out = Profile::kMegatron;
  else if (s == "textbook")
    *out = Profile::kTextbook;
  else if (s == "pytorch")
    *out = Profile::kPytorch;
  else if (s == "hf")
    *out = Profile::kHf;
  else
    return false;
  return true;
}
bool parse_attention(const std::string& s, Attention* out) {
  if (s == "eager")
    *out = Attention::kEager;
  else if (s == "sdpa_math")
    *out = Attention::kSdpaMath;
  else if (s == "flash")
    *out = Attention::kFlash;
  else
    return false;
  return true;
}
bool parse_optimizer(const std::string& s, Optimizer* out) {
  if (s == "adamw" || s == "adam")
    *out = Optimizer::kAdamW;
  else if (s == "sgd")
    *out = Optimizer::kSgd;
  else if (s == "sgd_momentum")
    *out = Optimizer::kSgdMomentum;
  else if (s == "adam8bit")
    *out = Optimizer::kAdam8bit;
  else if (s == "adafactor")
    *out = Optimizer::kAdafactor;
  else
    return false;
  return true;
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
    r.kind = RecomputeKind::kCustom;
  else if (s.rfind("layers:", 0) == 0 && s.size() > 7 && s.size() <= 7 + 4096) {
    for (std::size_t i = 7; i < s.size(); ++i)
      if (std::string("KSCRX").find(s[i]) == std::string::npos) return false;
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
