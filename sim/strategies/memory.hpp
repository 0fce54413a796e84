// Bytes per parameter and per activation element from the precision and the optimizer; what a GPU
// holds over an iteration is memory_timeline.hpp's (activations: saved_tensors.hpp).
//
// Bytes per parameter (the accounting of the ZeRO paper, Rajbhandari et al. 2020, section 3.1):
//   fp32 / tf32 : weights 4, gradients 4, optimizer 4 per state (SGD momentum 1, Adam 2)
//   amp         : as fp32, plus 2 for autocast's half-precision weight copies (weight_bytes; they
//                 exist from a layer's forward to its backward: stored_weight_bytes leaves them out)
//   fp16 / bf16 : weights 2 + fp32 master 4, gradients 2, optimizer 4 per state
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim {

/// How the optimizer's step runs over the parameters (torch/optim/optimizer.py): one multi-tensor
/// (foreach) kernel list, the default on CUDA (_default_to_fused_or_foreach); one fused kernel
/// (fused=True); or a Python loop over the tensors (foreach=False).
enum class OptimizerStep { Foreach, Fused, ForLoop };

struct MemoryRules {
  double weight_bytes = 4;      ///< per parameter, weights (incl. master copies and AMP's half copies)
  double stored_weight_bytes = 4;  ///< per parameter, what stays allocated (AMP's half copies are made per iteration)
  double grad_bytes = 4;        ///< per parameter
  double optimizer_bytes = 4;   ///< per parameter, all optimizer states together
  /// Bytes of one element of an optimizer state: fp32 unless the states follow a module kept in half
  /// precision (FSDP's sharded_dtype: zeros_like(param)). The foreach / per-tensor Adam's step
  /// temporaries have this dtype (torch/optim/adam.py _multi_tensor_adam: torch._foreach_sqrt(
  /// device_exp_avg_sqs); _single_tensor_adam: exp_avg_sq.sqrt()).
  double state_element_bytes = 4;
  double activation_bytes = 4;  ///< per activation element
  bool adam = false;            ///< Adam / AdamW (else SGD)
  OptimizerStep step = OptimizerStep::Foreach;
};

/// From training.precision and training.optimizer (parse_training checked its spelling).
MemoryRules memory_rules(const Scenario& scenario);
/// The same from a precision and one of optimizer_names() (scenario.hpp; no check).
MemoryRules memory_rules(Precision precision, std::string optimizer);

/// Parameters of layers [first, last).
double params_in(const Model& model, std::size_t first, std::size_t last);

/// Elements of the largest parameter tensor of layers [first, last).
double largest_param_tensor(const Model& model, std::size_t first, std::size_t last);

}  // namespace dtsim
