// See megatron_stage.hpp.
#include "sim/strategies/megatron_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

namespace {

/// Bytes per value of the cross entropy's reductions: Megatron computes them in fp32.
constexpr double kCrossEntropyValueBytes = 4;
/// AllReduces of the vocabulary-parallel cross entropy per token: max, target logit, sum of exp.
constexpr int kCrossEntropyReductions = 3;

double arch_or(const Model& model, const char* key, double fallback)
{
  const auto it = model.arch.find(key);
  return it == model.arch.end() ? fallback : it->second;
}

/// The collectives that stand for one `g` (forward) or `f` (backward) of a tensor of `bytes`.
std::vector<TpCollective> boundary(double bytes, bool sequence_parallel)
{
  if (sequence_parallel)
    return {{CollectiveOp::ReduceScatter, bytes}, {CollectiveOp::AllGather, bytes}};
  return {{CollectiveOp::AllReduce, bytes}};
}

/// The same where the `gathers` column-parallel linears after the boundary each bring their own input
/// to the whole tensor (TensorParallelOptions::gather_per_linear): forward, the row-parallel output's
/// ReduceScatter (or AllReduce) once and an AllGather per linear; backward, a ReduceScatter (or
/// AllReduce) of each linear's input gradient and the AllGather of the output gradient once.
std::vector<TpCollective> boundary_of(double bytes, bool sequence_parallel, int gathers, bool backward)
{
  std::vector<TpCollective> out;
  if (!sequence_parallel) {
    out.assign(backward ? gathers : 1, {CollectiveOp::AllReduce, bytes});
    return out;
  }
  out.assign(backward ? gathers : 1, {CollectiveOp::ReduceScatter, bytes});
  out.insert(out.end(), backward ? 1 : gathers, {CollectiveOp::AllGather, bytes});
  return out;
}

/// `p`'s chunk-cat copies (TensorParallelOptions::chunk_cat_s_per_byte), one per AllGather and
/// ReduceScatter, serial with the collective on the critical path as PyTorch waits for each: the
/// forward's in fwd_s (and in recompute_s when the re-run issues them again), the backward's in its
/// main part.
void add_chunk_cat_copies(StagePiece& p, double s_per_byte)
{
  const auto copies = [s_per_byte](const std::vector<TpCollective>& list) {
    double s = 0;
    for (const auto& c : list)
      if (c.op == CollectiveOp::AllGather || c.op == CollectiveOp::ReduceScatter)
        s += s_per_byte * c.bytes;
    return s;
  };
  const double fwd = copies(p.after_fwd);
  double bwd = copies(p.before_bwd) + copies(p.after_bwd);
  for (const auto& b : p.beside)
    bwd += copies({b.collective});
  const double again = p.recompute_collectives ? fwd : 0.0;
  p.fwd_s += fwd;
  p.bwd_s += bwd;
  p.recompute_s += again;
  p.chunk_cat_s = fwd + bwd + again;
}

}  // namespace

std::string checkpointing_note(const Recomputation& recompute)
{
  switch (recompute.policy) {
    case ActivationCheckpointing::Full:
      if (recompute.every > 1)
        return fmt::format("layer-level selective recomputation (torchtitan's selective_ac_option {0}, not a Megatron-LM "
                           "option): one transformer layer in {0}, counted over the whole model, runs its forward again "
                           "before its backward, keeping only its input; the others keep what they save",
                           recompute.every);
      return "full activation recomputation: each transformer layer's forward, its tensor-parallel collectives "
             "included, runs again before its backward; only layer inputs are kept";
    case ActivationCheckpointing::SelectiveOp:
      return "op-level selective recomputation (torchtitan): per transformer layer the matmuls' and the attention "
             "kernel's outputs are kept but every second matmul's, which runs again before the layer's backward "
             "with the elementwise ops";
    default:
      return "selective activation recomputation: the core attention's forward runs again before its backward";
  }
}

void check_heads_divide(const Model& model, int tensor, const JsonReader& where)
{
  // Tensor parallelism splits a transformer layer's attention heads and MLP columns; a model without
  // any (a CNN) has nothing it splits: its compute would only be divided, with no collectives.
  if (tensor > 1 && transformer_layers(model).empty())
    where.fail(fmt::format("expected 1 for model \"{}\", which has no transformer layers (tensor parallelism splits "
                           "attention heads and MLPs), got {}",
                           model.name, tensor));
  for (const char* key : {"heads", "kv_heads"}) {
    const auto it = model.arch.find(key);
    if (it != model.arch.end() && std::fmod(it->second, tensor) != 0)
      where.fail(fmt::format("expected a tensor-parallel degree that divides model \"{}\"'s {:g} {} (each rank holds whole "
                             "ones), got {}",
                             model.name, it->second, std::string(key) == "heads" ? "attention heads" : "key/value heads",
                             tensor));
  }
}

std::vector<bool> row_parallel_linears(const Model& model)
{
  std::vector<bool> row_parallel(model.layers.size(), false);
  for (const auto& b : transformer_layers(model)) {
    bool after_core = false, first_after_core = true;
    std::size_t last_linear = b.last;
    for (std::size_t i = b.first; i < b.last; ++i) {
      const auto& kind = model.layers[i].kind;
      if (kind == "attention")
        after_core = true;
      if (kind == "linear") {
        last_linear = i;
        if (after_core && first_after_core) {
          row_parallel[i] = true;
          first_after_core = false;
        }
      }
    }
    if (last_linear < b.last)
      row_parallel[last_linear] = true;
  }
  return row_parallel;
}

int output_layer(const Model& model)
{
  const auto blocks = transformer_layers(model);
  if (blocks.empty())
    return -1;
  const double logits = arch_or(model, "vocab", 0) * arch_or(model, "seq_len", 0);
  int best = -1;
  for (std::size_t i = blocks.back().last; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    if (l.kind != "linear")
      continue;
    if (logits > 0 && l.activation_elems == logits)
      return static_cast<int>(i);
    if (best < 0 || l.fwd_flops > model.layers[static_cast<std::size_t>(best)].fwd_flops)
      best = static_cast<int>(i);
  }
  return best;
}

bool tied_embeddings(const Model& model)
{
  // Tied: the output layer has no weight matrix of its own (it may keep a bias, as BERT's MLM
  // decoder does), i.e. no tensor as large as the word embedding's.
  const int out = output_layer(model);
  if (out < 0 || model.layers.front().param_tensors.empty())
    return false;
  const auto& embedding = model.layers.front().param_tensors;
  const std::int64_t word = *std::max_element(embedding.begin(), embedding.end());
  const auto& head = model.layers[static_cast<std::size_t>(out)].param_tensors;
  return std::none_of(head.begin(), head.end(), [&](std::int64_t t) { return t >= word; });
}

double StagePiece::bwd_main_s() const
{
  double s = bwd_s - bwd_after_s;
  for (const auto& b : beside)
    s -= b.compute_s;
  return std::max(0.0, s);
}

void add_tensor_parallel_traffic(const std::vector<StagePiece>& pieces, std::map<CollectiveOp, std::pair<double, int>>& per_op)
{
  const auto count = [&per_op](const std::vector<TpCollective>& list) {
    for (const auto& c : list) {
      per_op[c.op].first += c.bytes;
      ++per_op[c.op].second;
    }
  };
  for (const auto& piece : pieces) {
    count(piece.after_fwd);
    count(piece.before_bwd);
    for (const auto& beside : piece.beside)
      count({beside.collective});
    count(piece.after_bwd);
    if (piece.recompute_collectives)
      count(piece.after_fwd);
  }
}

StageMarks stage_marks(const Model& model)
{
  StageMarks m;
  const std::size_t L = model.layers.size();
  const auto blocks = transformer_layers(model);
  m.in_block.assign(L, false);
  m.block.assign(L, -1);
  m.even_matmul.assign(L, false);
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const auto& b = blocks[k];
    int matmuls = 0;
    for (std::size_t i = b.first; i < b.last; ++i) {
      m.in_block[i] = true;
      m.block[i] = static_cast<int>(k);
      if (model.layers[i].kind == "linear")
        m.even_matmul[i] = ++matmuls % 2 == 0;
    }
  }
  m.row_parallel = row_parallel_linears(model);
  m.first_block = blocks.empty() ? L : blocks.front().first;
  for (std::size_t i = 0; i < m.first_block; ++i)
    m.embedding = m.embedding || model.layers[i].kind == "embedding";
  m.head = output_layer(model);
  m.linears_after.assign(L + 1, 1);
  int count = 0;
  for (std::size_t k = L; k-- > 0;) {
    m.linears_after[k] = std::max(1, count);
    const Layer& l = model.layers[k];
    if (l.kind == "linear" && m.row_parallel[k])
      count = 0;
    else if (l.kind == "linear" && (m.in_block[k] || static_cast<int>(k) == m.head))
      ++count;
  }
  return m;
}

std::vector<StagePiece> stage_pieces(const Model& model, const LayerTimes& times, StageRange range, double micro,
                                     double activation_bytes, const TensorParallelOptions& tp)
{
  return stage_pieces(model, stage_marks(model), times, range, micro, activation_bytes, tp);
}

std::vector<StagePiece> stage_pieces(const Model& model, const StageMarks& marks, const LayerTimes& times, StageRange range,
                                     double micro, double activation_bytes, const TensorParallelOptions& tp)
{
  const double T = tp.tensor;
  const std::vector<bool>& in_block = marks.in_block;
  const std::vector<bool>& even_matmul = marks.even_matmul;
  const std::vector<bool>& row_parallel = marks.row_parallel;
  const std::size_t first_block = marks.first_block;
  const bool embedding = marks.embedding;
  const int head = marks.head;

  std::vector<StagePiece> pieces;
  StagePiece cur;
  bool cur_in_block = false;
  int cur_block = -1;  // the transformer layer the piece's rows belong to
  // The current piece's column-parallel linears' backward, and the backward of its layers before them.
  double column_bwd = 0, before_column_bwd = 0;
  const auto close = [&](std::vector<TpCollective> fwd, std::vector<TpCollective> bwd) {
    cur.after_fwd = std::move(fwd);
    cur.after_bwd = std::move(bwd);
    if (cur_in_block && tp.recompute.recomputes_whole(static_cast<std::size_t>(cur_block))) {
      cur.recompute_s = cur.fwd_s;
      cur.recompute_collectives = true;
    }
    pieces.push_back(std::move(cur));
    cur = StagePiece{};
    cur_in_block = false;
    cur_block = -1;
    column_bwd = before_column_bwd = 0;
  };
  // Megatron's backward of a piece that ends at a row-parallel linear (`row`) and holds column-parallel
  // ones whose input is `bytes`: the boundary collectives beside their GEMMs (megatron_stage.hpp);
  // the input-gradient and weight-gradient GEMMs have the same FLOPs, half the linears' backward each.
  const auto overlapped = [&](double bytes, bool row) {
    if (tp.sequence_parallel) {
      if (row)
        cur.before_bwd = {{CollectiveOp::AllGather, bytes}};
      cur.beside = {{{CollectiveOp::AllGather, bytes}, column_bwd / 2}, {{CollectiveOp::ReduceScatter, bytes}, column_bwd / 2}};
    } else {
      cur.beside = {{{CollectiveOp::AllReduce, bytes}, column_bwd / 2}};
    }
    cur.bwd_after_s = before_column_bwd;
  };
  const bool overlap = tp.overlap_backward && T > 1;
  // Per layer: the column-parallel linears after it up to the next row-parallel one, each gathering
  // its own input under gather_per_linear (else one gather serves them all).
  const auto gathers_after = [&](std::size_t i) { return tp.gather_per_linear ? marks.linears_after[i] : 1; };
  for (std::size_t i = range.first; i < range.last; ++i) {
    const Layer& l = model.layers[i];
    if (cur.name.empty())
      cur.name = l.name;
    cur.fwd_s += times.fwd[i] / T;
    cur.bwd_s += times.bwd[i] / T;
    cur_in_block = cur_in_block || in_block[i];
    if (in_block[i] && cur_block < 0)
      cur_block = marks.block[i];
    const bool column = l.kind == "linear" && !row_parallel[i] && (in_block[i] || static_cast<int>(i) == head);
    if (column)
      column_bwd += times.bwd[i] / T;
    else if (column_bwd == 0)
      before_column_bwd += times.bwd[i] / T;
    if (l.kind == "attention" && tp.recompute.policy == ActivationCheckpointing::Selective)
      cur.recompute_s += times.fwd[i] / T;
    if (even_matmul[i] && tp.recompute.policy == ActivationCheckpointing::SelectiveOp)
      cur.recompute_s += times.fwd[i] / T;
    const double hidden_bytes = l.activation_elems * micro * activation_bytes;
    if (T > 1 && row_parallel[i]) {
      if (overlap && column_bwd > 0) {
        overlapped(hidden_bytes, true);
        close(boundary(hidden_bytes, tp.sequence_parallel), {});
      } else {
        close(boundary_of(hidden_bytes, tp.sequence_parallel, gathers_after(i), false),
              boundary_of(hidden_bytes, tp.sequence_parallel, gathers_after(i), true));
      }
    } else if (T > 1 && i + 1 == first_block && embedding) {
      // The embeddings' sum: the vocabulary-parallel word embedding's AllReduce (forward only).
      close(boundary_of(hidden_bytes, tp.sequence_parallel, gathers_after(i), false), {});
    } else if (T > 1 && static_cast<int>(i) == head) {
      const double input_bytes = i > 0 ? model.layers[i - 1].activation_elems * micro * activation_bytes : 0;
      const double tokens = micro * arch_or(model, "seq_len", 1);
      std::vector<TpCollective> fwd(kCrossEntropyReductions,
                                    {CollectiveOp::AllReduce, tokens * kCrossEntropyValueBytes});
      if (!tp.loss_parallel)
        fwd = {{CollectiveOp::AllGather, hidden_bytes}};  // the logits, whole
      if (overlap) {  // the output layer is a column-parallel linear too (parallel_lm_logits)
        overlapped(input_bytes, false);
        close(std::move(fwd), {});
      } else {
        close(std::move(fwd), boundary(input_bytes, tp.sequence_parallel));
      }
    }
  }
  if (!cur.name.empty())
    close({}, {});
  if (T > 1 && tp.chunk_cat_s_per_byte > 0)
    for (auto& p : pieces)
      add_chunk_cat_copies(p, tp.chunk_cat_s_per_byte);
  // A piece's backward after its overlapped GEMMs (its LayerNorm) runs just before the next piece's
  // backward (the one before it in the model): one task with that one, the same time on the critical
  // path, a task fewer per piece and micro-batch (the first piece keeps its own).
  for (std::size_t k = pieces.size(); k-- > 1;) {
    pieces[k - 1].bwd_s += pieces[k].bwd_after_s;
    pieces[k].bwd_s -= pieces[k].bwd_after_s;
    pieces[k].bwd_after_s = 0;
  }
  if (T > 1)
    return pieces;
  // One tensor rank: the stage is one piece (no collective separates its layers).
  StagePiece whole;
  for (const auto& p : pieces) {
    whole.fwd_s += p.fwd_s;
    whole.bwd_s += p.bwd_s;
    whole.recompute_s += p.recompute_s;
  }
  return {whole};
}

LayerTimes with_recomputation(const Model& model, LayerTimes times, const Recomputation& recompute)
{
  if (!recompute.any())
    return times;
  // stage_pieces' rules, layer by layer (one pass: models have up to 100,000 layers).
  const StageMarks marks = stage_marks(model);
  for (std::size_t i = 0; i < times.bwd.size() && i < model.layers.size(); ++i) {
    const bool again = recompute.policy == ActivationCheckpointing::Full
                           ? marks.in_block[i] && recompute.recomputes_whole(static_cast<std::size_t>(marks.block[i]))
                       : recompute.policy == ActivationCheckpointing::Selective ? model.layers[i].kind == "attention"
                                                                                : marks.even_matmul[i];
    if (again)
      times.bwd[i] += times.fwd[i];
  }
  return times;
}

}  // namespace dtsim
