// How the processes of a multi-process dtsim-bench-nccl run agree on NCCL's unique id: rank 0
// creates it and publishes it through a shared file or a TCP socket; the other ranks wait for it.
#pragma once

#include <string>

namespace dtsim::bench {

/// `spec` is "file:PATH" (or a plain path) on a file system all ranks see, or "tcp:HOST:PORT"
/// (rank 0 listens on PORT + tag on all interfaces; the others connect to HOST). `tag` separates
/// successive communicators of one run. Rank 0 passes the id in `root_id`; every rank gets it back.
/// Throws BenchError after `timeout_s` seconds without the id.
std::string exchange_unique_id(const std::string& spec, int rank, int nranks, int tag,
                               const std::string& root_id, double timeout_s);

}  // namespace dtsim::bench
