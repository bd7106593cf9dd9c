#include "dptrain/net/memory_plan.hpp"

#include <algorithm>
#include <numeric>

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
std::size_t round_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

bool overlap_in_time(const MemoryPlan::Tensor& a, const MemoryPlan::Tensor& b) {
  return a.first <= b.last && b.first <= a.last;
}

// The running consumers of every node, in build (forward) order.
std::vector<std::vector<int>> consumers_of(std::span<const PlanNode> nodes) {
  std::vector<std::vector<int>> consumers(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].runs) continue;
    for (int j : nodes[i].inputs) consumers[static_cast<std::size_t>(j)].push_back(static_cast<int>(i));
  }
  return consumers;
}

std::size_t input_index(const PlanNode& consumer, int input) {
  return static_cast<std::size_t>(std::find(consumer.inputs.begin(), consumer.inputs.end(), input) -
                                  consumer.inputs.begin());
}

// A place for every storage: largest first, each at the lowest offset that no storage living at the
// same time occupies.
std::size_t place(std::vector<MemoryPlan::Tensor>& storages) {
  std::vector<std::size_t> order(storages.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (storages[a].bytes != storages[b].bytes) return storages[a].bytes > storages[b].bytes;
    return storages[a].first < storages[b].first;
  });
  std::vector<std::size_t> placed;
  std::size_t arena = 0;
  for (std::size_t s : order) {
    std::vector<std::pair<std::size_t, std::size_t>> busy;  // [offset, end) of those living alongside
    for (std::size_t p : placed) {
      if (overlap_in_time(storages[s], storages[p]))
        busy.emplace_back(storages[p].offset, storages[p].offset + storages[p].bytes);
    }
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + storages[s].bytes) break;  // the gap before this one is large enough
      offset = std::max(offset, end);
    }
    storages[s].offset = offset;
    arena = std::max(arena, offset + storages[s].bytes);
    placed.push_back(s);
  }
  return arena;
}
}  // namespace

int MemoryPlan::scratch_of(int consumer, std::size_t input) const {
  const auto& slots = scratch_of_[static_cast<std::size_t>(consumer)];
  return input < slots.size() ? slots[input] : -1;
}

bool MemoryPlan::accumulates(int consumer, std::size_t input) const {
  const auto& slots = accumulates_[static_cast<std::size_t>(consumer)];
  return input < slots.size() && slots[input];
}

MemoryPlan plan_memory(std::span<const PlanNode> nodes, NetPurpose purpose, std::size_t alignment) {
  DPTRAIN_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, "memory plan: alignment ", alignment,
                " is not a power of two");
  MemoryPlan plan;
  const int n = static_cast<int>(nodes.size());
  plan.node_count_ = n;
  plan.purpose_ = purpose;
  plan.alignment_ = alignment;
  plan.output_of_.assign(nodes.size(), -1);
  plan.gradient_of_.assign(nodes.size(), -1);
  plan.scratch_of_.resize(nodes.size());
  plan.accumulates_.resize(nodes.size());
  plan.in_place_.assign(nodes.size(), false);
  plan.backward_by_producer_.assign(nodes.size(), false);
  const bool training = purpose == NetPurpose::training;
  const auto consumers = consumers_of(nodes);
  auto& tensors = plan.tensors_;
  auto add = [&](MemoryPlan::Kind kind, int node, std::size_t bytes, int first, int last) {
    MemoryPlan::Tensor t{};
    t.kind = kind;
    t.node = node;
    t.bytes = round_up(bytes, alignment);
    t.first = first;
    t.last = last;
    t.storage = static_cast<int>(tensors.size());
    tensors.push_back(t);
    return static_cast<int>(tensors.size()) - 1;
  };

  for (int i = 0; i < n; ++i) {
    const PlanNode& node = nodes[static_cast<std::size_t>(i)];
    // What one buffer per tensor takes (the old scheme: every node's output, training-only ones too,
    // and in training a gradient and, for a tensor read by several layers, a scratch).
    if (node.planned) {
      const std::size_t b = round_up(node.bytes, alignment);
      std::size_t readers = 0;
      for (const PlanNode& other : nodes)
        readers += static_cast<std::size_t>(std::count(other.inputs.begin(), other.inputs.end(), i));
      plan.unplanned_bytes_ += training ? b * (2 + (readers > 1 ? 1 : 0)) : b;
    }
    if (!node.planned || !node.runs) continue;
    int last = MemoryPlan::forward_step(i);
    for (int c : consumers[static_cast<std::size_t>(i)]) {
      const PlanNode& reader = nodes[static_cast<std::size_t>(c)];
      last = std::max(last, MemoryPlan::forward_step(c));
      if (training && reader.backward_reads_input.at(input_index(reader, i)))
        last = std::max(last, plan.backward_step(c));
    }
    if (training && node.backward_reads_output) last = std::max(last, plan.backward_step(i));
    plan.output_of_[static_cast<std::size_t>(i)] =
        add(MemoryPlan::Kind::output, i, node.bytes, MemoryPlan::forward_step(i), last);
  }

  // In place: a node writes over input 0 when that input is read by nothing after this node's forward.
  for (int r = 0; r < n; ++r) {
    const PlanNode& node = nodes[static_cast<std::size_t>(r)];
    if (!node.in_place || node.inputs.empty() || plan.output_of(r) < 0) continue;
    const int p = node.inputs[0];
    const int from = plan.output_of(p);
    if (from < 0 || consumers[static_cast<std::size_t>(p)] != std::vector<int>{r}) continue;
    if (tensors[static_cast<std::size_t>(from)].last != MemoryPlan::forward_step(r)) continue;
    if (tensors[static_cast<std::size_t>(from)].bytes != tensors[static_cast<std::size_t>(plan.output_of(r))].bytes)
      continue;
    plan.in_place_[static_cast<std::size_t>(r)] = true;
    tensors[static_cast<std::size_t>(plan.output_of(r))].storage = tensors[static_cast<std::size_t>(from)].storage;
    // Its backward in the producer's: the output (the producer's memory) is read there, later.
    if (training && node.backward_by_producer) {
      plan.backward_by_producer_[static_cast<std::size_t>(r)] = true;
      auto& out = tensors[static_cast<std::size_t>(plan.output_of(r))];
      out.last = std::max(out.last, plan.backward_step(p));
    }
  }

  if (training) {
    // Gradients are written first by the last consumer (the first whose backward runs), or filled
    // with zeros by the node's own backward when no layer reads it, and read last by that backward.
    for (int i = n; i-- > 0;) {
      const PlanNode& node = nodes[static_cast<std::size_t>(i)];
      if (!node.planned || !node.runs || !node.needs_grad) continue;
      const auto& readers = consumers[static_cast<std::size_t>(i)];
      const int first = readers.empty() ? plan.backward_step(i) : plan.backward_step(readers.back());
      const int g = add(MemoryPlan::Kind::gradient, i, node.bytes, first, plan.backward_step(i));
      plan.gradient_of_[static_cast<std::size_t>(i)] = g;
      // Later consumers add theirs in: straight into the gradient where their backward can, else
      // through a scratch that lives for their own backward step only.
      for (std::size_t k = 0; k + 1 < readers.size(); ++k) {
        const int c = readers[k];
        const PlanNode& reader = nodes[static_cast<std::size_t>(c)];
        const std::size_t slot = input_index(reader, i);
        if (slot < reader.backward_accumulates_input.size() && reader.backward_accumulates_input[slot]) {
          auto& adds = plan.accumulates_[static_cast<std::size_t>(c)];
          if (adds.size() <= slot) adds.resize(slot + 1, false);
          adds[slot] = true;
          continue;
        }
        const int s = add(MemoryPlan::Kind::scratch, i, node.bytes, plan.backward_step(c), plan.backward_step(c));
        tensors[static_cast<std::size_t>(s)].consumer = c;
        auto& slots = plan.scratch_of_[static_cast<std::size_t>(c)];
        if (slots.size() <= slot) slots.resize(slot + 1, -1);
        slots[slot] = s;
      }
    }
    // An in-place node's input gradient is its output gradient's memory (its only reader is the node).
    for (int r = 0; r < n; ++r) {
      if (!plan.in_place(r)) continue;
      const int into = plan.gradient_of(nodes[static_cast<std::size_t>(r)].inputs[0]), from = plan.gradient_of(r);
      if (into < 0 || from < 0) continue;
      tensors[static_cast<std::size_t>(into)].storage = tensors[static_cast<std::size_t>(from)].storage;
    }
  }

  // Storages: the union of their tensors' lifetimes (chains of in-place nodes resolved to their root).
  auto root = [&](int t) {
    while (tensors[static_cast<std::size_t>(t)].storage != t) t = tensors[static_cast<std::size_t>(t)].storage;
    return t;
  };
  for (std::size_t t = 0; t < tensors.size(); ++t) tensors[t].storage = root(static_cast<int>(t));
  std::vector<MemoryPlan::Tensor> storages;
  std::vector<int> storage_index(tensors.size(), -1);
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const auto s = static_cast<std::size_t>(tensors[t].storage);
    if (storage_index[s] < 0) {
      storage_index[s] = static_cast<int>(storages.size());
      storages.push_back(tensors[t]);
    }
    auto& st = storages[static_cast<std::size_t>(storage_index[s])];
    st.first = std::min(st.first, tensors[t].first);
    st.last = std::max(st.last, tensors[t].last);
    st.bytes = std::max(st.bytes, tensors[t].bytes);
  }
  plan.arena_bytes_ = place(storages);
  for (auto& t : tensors)
    t.offset = storages[static_cast<std::size_t>(storage_index[static_cast<std::size_t>(t.storage)])].offset;
  return plan;
}

namespace {
// One layer call (or the Net's own zero fill or gradient sum) of the schedule.
struct Call {
  std::string what;
  std::vector<int> reads, writes;
  std::vector<std::pair<int, int>> in_place;  // (written, read) pairs allowed to share memory
};

const char* kind_name(MemoryPlan::Kind k) {
  switch (k) {
    case MemoryPlan::Kind::output: return "output";
    case MemoryPlan::Kind::gradient: return "gradient";
    case MemoryPlan::Kind::scratch: return "gradient scratch";
  }
  return "?";
}

std::vector<Call> schedule(std::span<const PlanNode> nodes, const MemoryPlan& plan) {
  std::vector<Call> calls;
  const int n = static_cast<int>(nodes.size());
  auto push_if = [](std::vector<int>& v, int t) {
    if (t >= 0) v.push_back(t);
  };
  for (int i = 0; i < n; ++i) {
    const PlanNode& node = nodes[static_cast<std::size_t>(i)];
    if (!node.runs || node.inputs.empty()) continue;
    Call c{"forward of node " + std::to_string(i), {}, {}, {}};
    for (int j : node.inputs) push_if(c.reads, plan.output_of(j));
    push_if(c.writes, plan.output_of(i));
    if (plan.in_place(i)) c.in_place.emplace_back(plan.output_of(i), plan.output_of(node.inputs[0]));
    calls.push_back(std::move(c));
  }
  if (plan.purpose() != NetPurpose::training) return calls;
  std::vector<bool> written(nodes.size(), false);
  // A node whose backward its producer does: the producer's backward reads that node's output and
  // gradient (its own memory, in place) instead of its own gradient.
  std::vector<int> fused_into(nodes.size(), -1);
  for (int r = 0; r < n; ++r) {
    if (plan.backward_by_producer(r))
      fused_into[static_cast<std::size_t>(nodes[static_cast<std::size_t>(r)].inputs[0])] = r;
  }
  for (int i = n; i-- > 0;) {
    const PlanNode& node = nodes[static_cast<std::size_t>(i)];
    if (!node.runs || node.inputs.empty()) continue;
    if (plan.backward_by_producer(i)) {
      const int grad = plan.gradient_of(i);
      if (grad >= 0 && !written[static_cast<std::size_t>(i)]) {
        calls.push_back(Call{"backward of node " + std::to_string(i) + " (zero fill)", {}, {grad}, {}});
      }
      written[static_cast<std::size_t>(node.inputs[0])] = true;  // the producer's gradient is this one's memory
      continue;
    }
    const std::string who = "backward of node " + std::to_string(i);
    const int fused = fused_into[static_cast<std::size_t>(i)];
    const int grad = fused >= 0 ? plan.gradient_of(fused) : plan.gradient_of(i);
    if (grad >= 0 && !written[static_cast<std::size_t>(i)]) calls.push_back(Call{who + " (zero fill)", {}, {grad}, {}});
    Call c{who, {}, {}, {}};
    push_if(c.reads, grad);
    if (fused >= 0) push_if(c.reads, plan.output_of(fused));
    if (node.backward_reads_output) push_if(c.reads, plan.output_of(i));
    std::vector<Call> sums;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const int j = node.inputs[k];
      if (node.backward_reads_input.at(k)) push_if(c.reads, plan.output_of(j));
      const int target = plan.gradient_of(j);
      if (target < 0) continue;
      const int scratch = plan.scratch_of(i, k);
      if (scratch >= 0) {
        c.writes.push_back(scratch);
        sums.push_back(Call{who + " (sum into node " + std::to_string(j) + ")", {scratch, target}, {target}, {}});
      } else if (plan.accumulates(i, k)) {
        c.reads.push_back(target);  // adds to what a later consumer wrote
        c.writes.push_back(target);
      } else {
        c.writes.push_back(target);
      }
      written[static_cast<std::size_t>(j)] = true;
    }
    if (plan.in_place(i) && grad >= 0 && plan.gradient_of(node.inputs[0]) >= 0) {
      c.in_place.emplace_back(plan.gradient_of(node.inputs[0]), grad);
    }
    calls.push_back(std::move(c));
    for (Call& s : sums) calls.push_back(std::move(s));
  }
  return calls;
}
}  // namespace

std::string verify_memory_plan(std::span<const PlanNode> nodes, const MemoryPlan& plan) {
  const auto& tensors = plan.tensors();
  auto overlap = [&](int a, int b) {
    const auto& x = tensors[static_cast<std::size_t>(a)];
    const auto& y = tensors[static_cast<std::size_t>(b)];
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  };
  auto name = [&](int t) {
    const auto& x = tensors[static_cast<std::size_t>(t)];
    return std::string(kind_name(x.kind)) + " of node " + std::to_string(x.node) + " [" + std::to_string(x.offset) +
           ", " + std::to_string(x.offset + x.bytes) + ")";
  };
  for (const auto& t : tensors) {
    if (t.offset + t.bytes > plan.arena_bytes())
      return name(static_cast<int>(&t - tensors.data())) + " lies outside the arena";
  }
  std::vector<long> last_write(tensors.size(), -1);
  std::vector<std::pair<long, int>> writes;  // (sequence number, tensor), in order
  long sequence = 0;
  for (const Call& call : schedule(nodes, plan)) {
    for (int r : call.reads) {
      if (last_write[static_cast<std::size_t>(r)] < 0)
        return call.what + " reads the " + name(r) + " before it is written";
      for (auto it = writes.rbegin(); it != writes.rend() && it->first > last_write[static_cast<std::size_t>(r)];
           ++it) {
        if (it->second != r && overlap(it->second, r)) {
          return call.what + " reads the " + name(r) + ", but the " + name(it->second) + " was written over it since";
        }
      }
    }
    auto allowed = [&](int w, int other) {
      return std::find(call.in_place.begin(), call.in_place.end(), std::pair{w, other}) != call.in_place.end();
    };
    for (int w : call.writes) {
      for (int r : call.reads) {
        if (r != w && overlap(w, r) && !allowed(w, r))
          return call.what + " writes the " + name(w) + " over the " + name(r) + " it reads";
      }
      for (int other : call.writes) {
        if (other != w && overlap(w, other))
          return call.what + " writes the " + name(w) + " and the " + name(other) + " into the same memory";
      }
    }
    ++sequence;
    for (int w : call.writes) {
      last_write[static_cast<std::size_t>(w)] = sequence;
      writes.emplace_back(sequence, w);
    }
    ++sequence;
  }
  return "";
}

}  // namespace dptrain
