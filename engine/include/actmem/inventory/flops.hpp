// Forward FLOPs of one layer and of the logits on one GPU (a multiply-add counts 2), for the
// recompute overhead; backward is taken as 2x forward (Kaplan et al. 2020; Narayanan et al. 2021).
#pragma once

#include "actmem/inventory/inventory.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

struct LayerFlops {
  double total = 0;  // one layer's forward
  double attention_core =
      0;              // QK^T and probabilities x V: 4·b·a·s·s·d (selective recompute's cost)
  double logits = 0;  // the output projection: 2·b·s·h·V
};

// One layer of kind `k` on one GPU (its geometry `g`).
LayerFlops layer_flops(const LayerKind& k, const LayerGeometry& g);

}  // namespace actmem
