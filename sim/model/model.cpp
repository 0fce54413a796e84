#include "sim/model/model.hpp"

#include <numeric>

namespace dtsim {

namespace {
const std::string& block_of(const Layer& layer)
{
  return layer.block.empty() ? layer.name : layer.block;
}
}  // namespace

std::int64_t Layer::params() const
{
  return std::accumulate(param_tensors.begin(), param_tensors.end(), std::int64_t{0});
}

std::int64_t Model::params() const
{
  std::int64_t total = 0;
  for (const auto& layer : layers)
    total += layer.params();
  return total;
}

double Model::fwd_flops() const
{
  double total = 0;
  for (const auto& layer : layers)
    total += layer.fwd_flops;
  return total;
}

std::int64_t Model::buffer_elems() const
{
  std::int64_t total = 0;
  for (const auto& layer : layers)
    total += layer.buffer_elems;
  return total;
}

std::size_t Model::param_tensor_count() const
{
  std::size_t count = 0;
  for (const auto& layer : layers)
    count += layer.param_tensors.size();
  return count;
}

std::vector<std::int64_t> Model::param_tensor_sizes() const
{
  std::vector<std::int64_t> sizes;
  sizes.reserve(param_tensor_count());
  for (const auto& layer : layers)
    sizes.insert(sizes.end(), layer.param_tensors.begin(), layer.param_tensors.end());
  return sizes;
}

bool Model::cut_allowed_after(std::size_t i) const
{
  if (i + 1 >= layers.size())
    return false;
  return block_of(layers[i]) != block_of(layers[i + 1]);
}

}  // namespace dtsim
