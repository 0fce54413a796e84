#include "sim/collectives/nccl_env.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

namespace {

/// `s` without surrounding spaces, tabs and quotes.
std::string trim(const std::string& s)
{
  const auto b = s.find_first_not_of(" \t\"'");
  if (b == std::string::npos)
    return "";
  return s.substr(b, s.find_last_not_of(" \t\"'") - b + 1);
}

/// "all_reduce" and "AllReduce" alike: lower case without underscores.
std::string squash(const std::string& s)
{
  std::string out;
  for (char c : lower(s))
    if (c != '_')
      out += c;
  return out;
}

bool unset(const std::string& value) { return value.empty() || lower(value) == "default"; }

/// The list NCCL_ALGO / NCCL_PROTO give `op`: the "func:list" entry naming `op`, else the entry
/// without a function; "" when neither exists.
std::string list_for(const std::string& name, const std::string& value, CollectiveOp op, const std::string& source)
{
  std::string general, specific;
  for (const std::string& entry : split_trimmed(trim(value), ';')) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos) {
      general = entry;
      continue;
    }
    const std::string func = squash(trim(entry.substr(0, colon)));
    bool known = func == "send" || func == "recv";
    for (int i = 0; i <= static_cast<int>(CollectiveOp::SendRecv); ++i)
      known = known || func == squash(to_string(static_cast<CollectiveOp>(i)));
    if (!known)
      throw InputError(source, "", fmt::format("{}: unknown collective '{}' in '{}' (expected allreduce, allgather, "
                                               "reducescatter, broadcast, reduce, sendrecv)", name, func, value));
    if (func == squash(to_string(op)))
      specific = trim(entry.substr(colon + 1));
  }
  return specific.empty() ? general : specific;
}

/// The members of `all` that `list` allows ("a,b" includes, "^a,b" excludes).
template <class T, class Parse>
std::vector<T> allowed(const std::string& name, const std::string& list, const std::vector<T>& all, Parse parse,
                       const char* expected, const std::string& source)
{
  const bool exclude = !list.empty() && list[0] == '^';
  std::vector<T> named;
  for (const std::string& item : split_trimmed(exclude ? list.substr(1) : list, ',')) {
    if (item.empty())
      continue;
    const auto v = parse(item);
    if (!v)
      throw InputError(source, "", fmt::format("{}: unknown value '{}' (expected {})", name, item, expected));
    named.push_back(*v);
  }
  std::vector<T> out;
  for (T v : all)
    if ((std::find(named.begin(), named.end(), v) != named.end()) != exclude)
      out.push_back(v);
  if (out.empty())
    throw InputError(source, "", fmt::format("{}={} leaves nothing to run (expected {})", name, list, expected));
  return out;
}

}  // namespace

NcclEnv nccl_env_of(const std::string& algo, const std::string& proto)
{
  NcclEnv env;
  if (!algo.empty())
    env.emplace_back("NCCL_ALGO", algo);
  if (!proto.empty())
    env.emplace_back("NCCL_PROTO", proto);
  return env;
}

std::string nccl_env_value(const NcclEnv& env, const std::string& name)
{
  std::string value;
  for (const auto& [n, v] : env)
    if (n == name)
      value = v;
  return value;
}

NcclFilter nccl_filter_from_env(const NcclEnv& env, CollectiveOp op, const std::string& source)
{
  std::vector<NcclAlgo> algos;
  for (int i = 0; i < kNcclAlgos; ++i)
    algos.push_back(static_cast<NcclAlgo>(i));
  const std::vector<NcclProto> protos = {NcclProto::LL, NcclProto::LL128, NcclProto::Simple};
  NcclFilter filter;
  if (const std::string v = nccl_env_value(env, "NCCL_ALGO"); !unset(v))
    if (const std::string list = list_for("NCCL_ALGO", v, op, source); !list.empty())
    {
      filter.algos = allowed("NCCL_ALGO", list, algos, parse_nccl_algo,
                             "Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT", source);
      // CollNet needs a SHARP-capable network plug-in, which dtsim does not model: with only CollNet
      // left, nothing modelled would run (NCCL itself fails when no allowed algorithm applies).
      if (std::all_of(filter.algos.begin(), filter.algos.end(),
                      [](NcclAlgo a) { return a == NcclAlgo::CollNetDirect || a == NcclAlgo::CollNetChain; }))
        throw InputError(source, "", fmt::format("NCCL_ALGO={} leaves only CollNet, which is not modelled (expected "
                                                 "one of Ring, Tree, NVLS, NVLSTree, PAT to remain)", list));
    }
  if (const std::string v = nccl_env_value(env, "NCCL_PROTO"); !unset(v))
    if (const std::string list = list_for("NCCL_PROTO", v, op, source); !list.empty())
      filter.protos = allowed("NCCL_PROTO", list, protos, parse_nccl_proto, "LL, LL128, Simple", source);
  if (trim(nccl_env_value(env, "NCCL_NVLS_ENABLE")) == "0") {
    if (filter.algos.empty())
      filter.algos = algos;
    std::erase_if(filter.algos, [](NcclAlgo a) { return a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree; });
    if (filter.algos.empty())
      throw InputError(source, "", "NCCL_NVLS_ENABLE=0 with NCCL_ALGO allowing only NVLS leaves nothing to run");
  }
  // Named by nccl_choose should the filter leave nothing for a collective on the topology.
  filter.source = source;
  const bool options = source == "command line";  // nccl-tests / validate --algo, --proto (nccl_env_of)
  for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE"})
    if (const std::string v = nccl_env_value(env, name); !unset(v))
      filter.setting += fmt::format("{}{}{}", filter.setting.empty() ? "" : ", ",
                                    !options                          ? fmt::format("{}=", name)
                                    : std::string(name) == "NCCL_ALGO" ? std::string("--algo ")
                                                                       : std::string("--proto "),
                                    v);
  return filter;
}

bool nccl_env_modelled(const std::string& name)
{
  return name == "NCCL_ALGO" || name == "NCCL_PROTO" || name == "NCCL_NVLS_ENABLE";
}

std::string describe_nccl_env(const NcclEnv& env)
{
  std::vector<std::string> names;
  for (const auto& [n, v] : env)
    if (n.rfind("NCCL_DEBUG", 0) != 0 && std::find(names.begin(), names.end(), n) == names.end())
      names.push_back(n);
  std::string out;
  for (const auto& n : names) {
    const std::string v = nccl_env_value(env, n);
    if (unset(v))
      continue;
    out += fmt::format("{}{}={} ({})", out.empty() ? "" : ", ", n, v, nccl_env_modelled(n) ? "applied" : "not modelled");
  }
  return out;
}

}  // namespace dtsim
